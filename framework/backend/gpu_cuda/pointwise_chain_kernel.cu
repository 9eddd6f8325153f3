// PointwiseChain on the device (pointwise_chain_kernel.h): thread t owns
// elements [8t, 8t + 8) and runs every step over them in turn. Buffers of
// different steps are the same pointer or disjoint (kernels.def), so an
// element a step reads was written, if at all, by this thread.

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/elementwise_kernels.h"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/pointwise_chain_kernel.h"

namespace tvlab {
namespace cuda {
namespace {

constexpr int kElementsPerThread = 8;  // one Philox block: 4 words, 8 halves

__device__ __forceinline__ float ApplyBinary(int32_t op, float a, float b) {
  switch (static_cast<GpuBinary>(op)) {
    case GpuBinary::kAdd: return a + b;
    case GpuBinary::kSub: return a - b;
    case GpuBinary::kMul: return a * b;
    case GpuBinary::kDiv: return a / b;
  }
  return 0.0f;
}

// Step `s` over this thread's elements [first, first + count).
__device__ void RunStep(const GpuPointwiseStep& s, int64_t group, int64_t first, int count) {
  switch (s.kind) {
    case GpuPointwiseKind::kBinary:
      for (int e = 0; e < count; ++e) s.out[first + e] = ApplyBinary(s.op, s.a[first + e], s.b[first + e]);
      return;
    case GpuPointwiseKind::kRelu:
      for (int e = 0; e < count; ++e) s.out[first + e] = s.a[first + e] > 0 ? s.a[first + e] : 0.0f;
      return;
    case GpuPointwiseKind::kReluBackward:  // dy * f'(x), as UnaryBackwardKernel<kRelu>
      for (int e = 0; e < count; ++e) s.out[first + e] = s.c[first + e] * (s.a[first + e] > 0 ? 1.0f : 0.0f);
      return;
    case GpuPointwiseKind::kDropoutMask: {
      const PhiloxBlock words = PhiloxStreamFourWords(s.stream, static_cast<uint64_t>(group));
      for (int e = 0; e < count; ++e) {
        const uint32_t half = (words.w[e >> 1] >> ((e & 1) * 16)) & 0xFFFFu;
        s.out[first + e] = half < s.threshold ? 0.0f : s.keep_scale;
      }
      return;
    }
  }
}

__global__ void PointwiseChainKernel(GpuPointwiseChain chain, int64_t n) {
  const int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t first = group * kElementsPerThread;
  if (first >= n) return;
  const int count = n - first < kElementsPerThread ? static_cast<int>(n - first) : kElementsPerThread;
  for (int i = 0; i < chain.count; ++i) RunStep(chain.steps[i], group, first, count);
}

}  // namespace

int LaunchPointwiseChain(const GpuPointwiseChain& chain, int64_t n) {
  if (n <= 0 || chain.count == 0) return 0;
  const int threads = 256;
  const int64_t groups = (n + kElementsPerThread - 1) / kElementsPerThread;
  const int64_t grid = (groups + threads - 1) / threads;
  TVLAB_LAUNCH(static_cast<unsigned>(grid), threads, 0, 0, PointwiseChainKernel)(chain, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace cuda
}  // namespace tvlab
