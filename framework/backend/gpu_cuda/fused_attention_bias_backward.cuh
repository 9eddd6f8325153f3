#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_BIAS_BACKWARD_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_BIAS_BACKWARD_CUH_

// The gradient of a bucketed relative bias's table (fused_attention.h), in
// two deterministic steps after the fp32 or tensor-core backward kernels
// (fused_attention_device.cuh has the helpers):
//   1. per (head h, distance index x = j - i + T - 1), one thread sums, over
//      b and the queries i whose key j it sees, the gradient of the logit
//      g_ij = P_ij (M_ij dW_ij - D_i) cap'_ij, recomputing q_i . k_j and
//      dout_i . v_j in fp32 (the bias is on the logit before the scale-free
//      soft-cap, so no scale);
//   2. per (bucket k, head h), one thread sums the distances of bucket k in
//      index order.
// Fixed summation orders, no atomics: the same table gradient every run.
// Work O(B H T S (hs + hs_v)) spread over H (T + S - 1) threads: a cost
// only runs with a bucketed bias pay.

#include "framework/backend/gpu_cuda/fused_attention_device.cuh"

namespace tvlab {
namespace cuda {
namespace fused {

// Step 1: distance_grad (H, T + S - 1).
__global__ void __launch_bounds__(kThreads)
    DistanceGradientKernel(FusedAttentionParams p, const float* __restrict__ q,
                           const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ lse, const float* __restrict__ dout,
                           const float* __restrict__ row_dot, float* __restrict__ distance_grad) {
  const int64_t thread = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (thread >= p.heads * p.distance_span) return;  // no shuffles or barriers below
  const int64_t h = thread / p.distance_span, index = thread % p.distance_span;
  const int64_t T = p.queries, S = p.keys, hs = p.head_dim, hv = p.value_dim;
  const int64_t g = h / (p.heads / p.kv_heads);
  // Key j = i + index - (T - 1) must lie in [0, S).
  const int64_t i_begin = Max64(0, T - 1 - index), i_end = Min64(T, S + T - 1 - index);
  float sum = 0.0f;
  for (int64_t b = 0; b < p.batch; ++b) {
    const float* kbg = k + (b * p.kv_heads + g) * S * hs;  // (S, hs)
    const float* vbg = v + (b * p.kv_heads + g) * S * hv;  // (S, hs_v)
    for (int64_t i = i_begin; i < i_end; ++i) {
      const int64_t row = (b * p.heads + h) * T + i, j = i + index - (T - 1);
      const float row_lse = lse[row];
      if (row_lse == -INFINITY || !Visible(p, b, i, j, VisibleEnd(p, b, i))) continue;
      float dot = 0.0f, dw = 0.0f;
      for (int64_t c = 0; c < hs; ++c) dot += q[row * hs + c] * kbg[j * hs + c];
      for (int64_t c = 0; c < hv; ++c) dw += dout[row * hv + c] * vbg[j * hv + c];
      const float logit = Logit(p, dot, h, i, j);
      const float prob = expf(logit - row_lse);
      sum += prob * (Keep(p, row, j) * dw - row_dot[row]) * SoftCapSlope(p, logit);
    }
  }
  distance_grad[thread] = sum;
}

// Step 2: dbias_table (num_buckets, H).
__global__ void __launch_bounds__(kThreads)
    BucketTableGradientKernel(FusedAttentionParams p, const float* __restrict__ distance_grad,
                              float* __restrict__ dbias_table) {
  const int64_t thread = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (thread >= p.num_buckets * p.heads) return;
  const int64_t bucket = thread / p.heads, h = thread % p.heads;
  float sum = 0.0f;
  for (int64_t index = 0; index < p.distance_span; ++index)
    if (p.distance_buckets[index] == bucket) sum += distance_grad[h * p.distance_span + index];
  dbias_table[thread] = sum;
}

}  // namespace fused
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_BIAS_BACKWARD_CUH_
