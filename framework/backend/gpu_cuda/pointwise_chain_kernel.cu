// PointwiseChain on the device (pointwise_chain_kernel.h): thread t owns
// elements [8t, 8t + 8) and runs every step over them in turn, a scratch
// step's values in the thread's own array instead of memory. Buffers of
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

// A thread's scratch: each scratch step's values of its 8 elements.
using Scratch = float[kMaxGpuPointwiseSteps][kElementsPerThread];

// Element e of an operand: from memory, or from the scratch slot that
// holds it.
__device__ __forceinline__ float In(const float* p, int32_t slot, const Scratch& scratch, int64_t first, int e) {
  return slot >= 0 ? scratch[slot][e] : p[first + e];
}

__device__ __forceinline__ void Out(const GpuPointwiseStep& s, Scratch& scratch, int64_t first, int e, float v) {
  if (s.out_slot >= 0) {
    scratch[s.out_slot][e] = v;
  } else {
    s.out[first + e] = v;
  }
}

// Step `s` over this thread's elements [first, first + count).
__device__ void RunStep(const GpuPointwiseStep& s, Scratch& scratch, int64_t group, int64_t first, int count) {
  switch (s.kind) {
    case GpuPointwiseKind::kBinary:
      for (int e = 0; e < count; ++e)
        Out(s, scratch, first, e,
            ApplyBinary(s.op, In(s.a, s.a_slot, scratch, first, e), In(s.b, s.b_slot, scratch, first, e)));
      return;
    case GpuPointwiseKind::kRelu:
      for (int e = 0; e < count; ++e) {
        const float x = In(s.a, s.a_slot, scratch, first, e);
        Out(s, scratch, first, e, x > 0 ? x : 0.0f);
      }
      return;
    case GpuPointwiseKind::kReluBackward:  // dy * f'(x), as UnaryBackwardKernel<kRelu>
      for (int e = 0; e < count; ++e)
        Out(s, scratch, first, e,
            In(s.c, s.c_slot, scratch, first, e) * (In(s.a, s.a_slot, scratch, first, e) > 0 ? 1.0f : 0.0f));
      return;
    case GpuPointwiseKind::kDropoutMask: {
      const PhiloxBlock words = PhiloxStreamFourWords(s.stream, static_cast<uint64_t>(group));
      for (int e = 0; e < count; ++e) {
        const uint32_t half = (words.w[e >> 1] >> ((e & 1) * 16)) & 0xFFFFu;
        Out(s, scratch, first, e, half < s.threshold ? 0.0f : s.keep_scale);
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
  Scratch scratch;
  for (int i = 0; i < chain.count; ++i) RunStep(chain.steps[i], scratch, group, first, count);
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
