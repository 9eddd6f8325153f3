#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_INDEX_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_INDEX_KERNELS_H_

// Launchers of the data-movement kernels (Backend::Permute, Copy2D, Gather,
// ScatterAdd, ArgMaxRows). They return the CUDA error code of their launches
// (0 = success).

#include <cstdint>

#include "framework/backend/gpu_cuda/elementwise_kernels.h"  // kMaxGpuRank

namespace tvlab {

// y (out_size, row-major, n elements) = x read at sum_d index[d] * src_stride[d]
// (src_stride[d] = x's stride of the dimension that lands at d).
struct PermuteIndex {
  int rank = 0;
  int64_t out_size[kMaxGpuRank] = {};
  int64_t src_stride[kMaxGpuRank] = {};
};
int LaunchPermute(const float* x, const PermuteIndex& index, int64_t n, float* y);

// dst[r * dst_stride + c] = src[r * src_stride + c] (cudaMemcpy2DAsync when
// the strides allow it, else a kernel).
int LaunchCopy2D(const float* src, int64_t src_stride, float* dst, int64_t dst_stride,
                 int64_t rows, int64_t cols);

// out[i, :] = table[ids[i], :].
int LaunchGather(const float* table, int64_t cols, const int32_t* ids, int64_t n, float* out);
// d_table[ids[i], :] += d_out[i, :] (atomicAdd: repeated ids add up).
int LaunchScatterAdd(const float* d_out, int64_t cols, const int32_t* ids, int64_t n,
                     float* d_table);

// out[r] = the first index of the largest value of row r.
int LaunchArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_INDEX_KERNELS_H_
