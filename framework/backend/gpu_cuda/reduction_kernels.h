#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_REDUCTION_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_REDUCTION_KERNELS_H_

// Launchers of the reductions (Backend::ReduceSumTo, SumSquares). Both are
// deterministic: partial sums in a fixed layout, then a second pass that adds
// them in a fixed order (no atomics), so a result does not vary run to run.
// Each takes a device scratch buffer of the size its *ScratchBytes function
// gives (the backend takes it from the caching allocator) and returns the
// CUDA error code of its launches (0 = success).

#include <cstddef>
#include <cstdint>

#include "framework/backend/gpu_cuda/elementwise_kernels.h"  // kMaxGpuRank

namespace tvlab {

// x viewed as (kept dims..., reduced dims...): an output element is indexed
// by the kept dims (row-major, out's order), the values summed into it by the
// reduced dims; strides are x's, in elements.
struct ReduceIndex {
  int kept_rank = 0;
  int64_t kept_size[kMaxGpuRank] = {};
  int64_t kept_stride[kMaxGpuRank] = {};
  int reduced_rank = 0;
  int64_t reduced_size[kMaxGpuRank] = {};
  int64_t reduced_stride[kMaxGpuRank] = {};
};

// out[o] = sum over the reduced dims of x (accumulated in double).
size_t ReduceSumToScratchBytes(int64_t n_out, int64_t n_reduced);
int LaunchReduceSumTo(const float* x, const ReduceIndex& index, int64_t n_out,
                      int64_t n_reduced, float* out, void* scratch);

// acc[0] += sum of x[i]^2, in double (acc is a device pointer).
size_t SumSquaresScratchBytes(int64_t n);
int LaunchSumSquares(const float* x, int64_t n, double* acc, void* scratch);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_REDUCTION_KERNELS_H_
