#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_KERNEL_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_KERNEL_H_

// Launchers of the CUDA fused attention kernels (fused_attention_kernel.cu).
// What they compute is FusedAttentionDesc's definition (fused_attention.h);
// this header is the plain-data form of that desc that a kernel can take by
// value, with the mask's key lengths and the ALiBi slopes already on the
// device. gpu_cuda_attention.cc builds it from a FusedAttentionDesc.
//
// Legend: B batch, H query heads, G key/value heads (H % G == 0), T queries,
// S keys, hs = head_dim (q, k), hs_v = value_dim (v, out). Row-major,
// last dimension contiguous; every pointer is device memory.

#include <cstdint>
#include <string>

#include "framework/backend/gpu_cuda/philox.cuh"

namespace tvlab {
namespace cuda {

struct FusedAttentionParams {
  int64_t batch = 0, heads = 0, kv_heads = 0;  // B, H, G
  int64_t queries = 0, keys = 0;               // T, S
  int64_t head_dim = 0, value_dim = 0;         // hs, hs_v
  float scale = 1.0f;
  // The mask (attention_mask.h): query i sees key j iff
  //   (!causal || j <= causal_offset + i) && (!key_lengths || j < key_lengths[b])
  //   && (window == 0 || |causal_offset + i - j| < window).
  bool causal = false;
  int64_t causal_offset = 0;
  int64_t window = 0;
  const int32_t* key_lengths = nullptr;  // (B) on the device, or null
  // Documents (attention_mask.h): query i also needs key j inside the
  // document of position causal_offset + i, [document_begin[b*S + x],
  // document_end[b*S + x]) with x = causal_offset + i; (B, S) each on the
  // device, or null.
  const int32_t* document_begin = nullptr;
  const int32_t* document_end = nullptr;
  // ALiBi: logit -= float(alibi_slopes[h] * |alibi_offset + i - j|), in double
  // as the reference backend does.
  const double* alibi_slopes = nullptr;  // (H) on the device, or null
  int64_t alibi_offset = 0;
  // The soft-cap: logit = c * tanh(logit / c) after ALiBi, before the mask
  // (0 = none); and the sink logits, one more softmax entry per row with a
  // zero value (fused_attention.h).
  float logit_softcap = 0.0f;
  const float* sink_logits = nullptr;  // (H) on the device, or null
  // A bucketed relative bias (T5; FusedAttentionDesc::bucket_bias): logit +=
  // distance_bias[h * distance_span + j - i + T - 1] after ALiBi, before the
  // soft-cap: (H, T + S - 1) on the device, or null; distance_buckets
  // (T + S - 1) on the device gives each distance's bucket of the
  // (num_buckets, H) table, for the backward.
  const float* distance_bias = nullptr;
  const int32_t* distance_buckets = nullptr;
  int64_t distance_span = 0;  // T + S - 1
  int64_t num_buckets = 0;
  // Dropout of the weights (B, H, T, S) in row-major element order,
  // philox.cuh's DropoutFactor; off when dropout is false.
  bool dropout = false;
  uint32_t dropout_threshold = 0;  // round(p * 65536)
  float keep_scale = 1.0f;         // 1 / (1 - p)
  PhiloxStream stream = {};
  // runtime.precision bf16: the tensor-core kernels
  // (fused_attention_tensor_core.cuh: bf16 operands, fp32 accumulation and
  // softmax) where the padded head sizes are at most 128; the fp32 kernels
  // otherwise, and always when false.
  bool bf16 = false;
};

// Forward: out (B, H, T, hs_v) and lse (B, H, T) from q (B, H, T, hs),
// k (B, G, S, hs), v (B, G, S, hs_v). A row that sees no key gets out = 0
// and lse = -inf (the sink's logit with sinks). Returns "" on success, else what went wrong.
std::string LaunchFusedAttentionForward(const FusedAttentionParams& p, const float* q,
                                        const float* k, const float* v, float* out,
                                        float* lse);

// Backward: dq (B, H, T, hs), dk (B, G, S, hs), dv (B, G, S, hs_v), all
// overwritten, from dout (B, H, T, hs_v) and the forward's out and lse.
// row_dot is scratch (B, H, T) for D_i = dout_i . out_i. With a bucketed
// bias (distance_bias set) also dbias_table (num_buckets, H), overwritten,
// through distance_grad, scratch (H, T + S - 1); both null without one.
// Returns "" on success, else what went wrong.
std::string LaunchFusedAttentionBackward(const FusedAttentionParams& p, const float* q,
                                         const float* k, const float* v, const float* out,
                                         const float* lse, const float* dout, float* dq,
                                         float* dk, float* dv, float* row_dot,
                                         float* dbias_table, float* distance_grad);

}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_KERNEL_H_
