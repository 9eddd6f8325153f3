// GpuCudaBackend::FusedAttention and FusedAttentionBackward: a
// FusedAttentionDesc turned into the kernels' plain-data params (the mask's
// key lengths and the ALiBi slopes copied to the device), then the launchers
// of fused_attention_kernel.cu.

#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <vector>

#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/backend/gpu_cuda/fused_attention_kernel.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/core/check.h"
#include "framework/tensor/tensor.h"

namespace tvlab {
namespace {

// The params of `d`. The slopes (H doubles), sink logits (H floats), key
// lengths (B int32) and a bucketed bias's distance bias (H x (T + S - 1)
// floats), distance buckets (T + S - 1 int32, both from the desc:
// fused_attention.h) and the documents' begin and end tables (B x S int32
// each) go to the device in one copy, into `tables`, which must
// outlive the launches
// (it does: the caller holds it until they are queued, and a later reuse of
// its memory is ordered after them on the one stream).
cuda::FusedAttentionParams MakeParams(const FusedAttentionDesc& d, Tensor* tables) {
  TVLAB_CHECK(!d.token_major) << "gpu_cuda's fused attention takes head-major q, k, v only "
                                 "(PrefersTokenMajorFusedAttention is false)";
  d.CheckConsistent();
  cuda::FusedAttentionParams p;
  p.batch = d.batch, p.heads = d.heads, p.kv_heads = d.kv_heads;
  p.queries = d.queries, p.keys = d.keys;
  p.head_dim = d.head_dim, p.value_dim = d.value_dim;
  p.scale = d.scale;
  p.causal = d.mask.causal;
  p.causal_offset = d.mask.causal_offset;
  p.window = d.mask.window;
  p.alibi_offset = d.alibi_offset;
  p.logit_softcap = d.logit_softcap;
  p.bf16 = d.precision == Precision::kBf16;  // the tensor-core kernels where they fit
  if (d.dropout > 0.0f) {
    p.dropout = true;
    p.dropout_threshold = DropoutThreshold(d.dropout);
    p.keep_scale = DropoutKeepScale(d.dropout);
    p.stream = cuda::MakePhiloxStream(*d.dropout_stream);
  }

  // Host image of the tables: [slopes (H doubles)][sink logits (H floats)]
  // [key lengths (B int32)][distance bias (H, T + S - 1)][distance buckets]
  // [document begin (B, S)][document end (B, S)].
  const std::vector<float> distance_bias = d.has_bucket_bias() ? d.DistanceBias() : std::vector<float>();
  const std::vector<int32_t> buckets = d.has_bucket_bias() ? d.DistanceBuckets() : std::vector<int32_t>();
  const size_t slope_bytes = d.alibi_slopes.size() * sizeof(double);
  const size_t sink_bytes = d.sink_logits.size() * sizeof(float);
  const size_t length_bytes = d.mask.key_lengths.size() * sizeof(int32_t);
  const size_t bias_bytes = distance_bias.size() * sizeof(float);
  const size_t bucket_bytes = buckets.size() * sizeof(int32_t);
  const size_t document_bytes = d.mask.document_begin.size() * sizeof(int32_t);
  const size_t bias_at = slope_bytes + sink_bytes + length_bytes, buckets_at = bias_at + bias_bytes;
  const size_t documents_at = buckets_at + bucket_bytes;
  if (documents_at + 2 * document_bytes == 0) return p;
  std::vector<char> host(documents_at + 2 * document_bytes);
  if (slope_bytes) std::memcpy(host.data(), d.alibi_slopes.data(), slope_bytes);  // not null
  if (sink_bytes) std::memcpy(host.data() + slope_bytes, d.sink_logits.data(), sink_bytes);
  for (size_t b = 0; b < d.mask.key_lengths.size(); ++b) {
    const int64_t length = d.mask.key_lengths[b];
    TVLAB_CHECK(length <= std::numeric_limits<int32_t>::max()) << "key length " << length;
    const int32_t narrow = static_cast<int32_t>(std::max<int64_t>(length, 0));
    std::memcpy(host.data() + slope_bytes + sink_bytes + b * sizeof(int32_t), &narrow,
                sizeof(narrow));
  }
  if (bias_bytes) std::memcpy(host.data() + bias_at, distance_bias.data(), bias_bytes);
  if (bucket_bytes) std::memcpy(host.data() + buckets_at, buckets.data(), bucket_bytes);
  if (document_bytes) {
    std::memcpy(host.data() + documents_at, d.mask.document_begin.data(), document_bytes);
    std::memcpy(host.data() + documents_at + document_bytes, d.mask.document_end.data(),
                document_bytes);
  }
  // Floats enough for the bytes. Each caching-allocator buffer is a whole
  // cudaMalloc block (256-byte aligned), so the doubles at offset 0 are
  // aligned.
  *tables = Tensor::Empty({static_cast<int64_t>((host.size() + 3) / 4)}, Device::kCuda);
  char* device = reinterpret_cast<char*>(tables->ptr());
  const cudaError_t err = cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice);
  TVLAB_CHECK(err == cudaSuccess) << "fused attention tables: " << cudaGetErrorString(err);
  if (slope_bytes) p.alibi_slopes = reinterpret_cast<const double*>(device);
  if (sink_bytes) p.sink_logits = reinterpret_cast<const float*>(device + slope_bytes);
  if (length_bytes)
    p.key_lengths = reinterpret_cast<const int32_t*>(device + slope_bytes + sink_bytes);
  if (bias_bytes) {
    p.distance_bias = reinterpret_cast<const float*>(device + bias_at);
    p.distance_buckets = reinterpret_cast<const int32_t*>(device + buckets_at);
    p.distance_span = d.distance_span();
    p.num_buckets = d.bucket_bias.rule.num_buckets;
  }
  if (document_bytes) {
    p.document_begin = reinterpret_cast<const int32_t*>(device + documents_at);
    p.document_end = reinterpret_cast<const int32_t*>(device + documents_at + document_bytes);
  }
  return p;
}

}  // namespace

void GpuCudaBackend::FusedAttention(const FusedAttentionDesc& d, const float* q, const float* k,
                                    const float* v, float* out, float* lse) {
  Tensor tables;
  const cuda::FusedAttentionParams p = MakeParams(d, &tables);
  const std::string error = cuda::LaunchFusedAttentionForward(p, q, k, v, out, lse);
  TVLAB_CHECK(error.empty()) << error;
}

void GpuCudaBackend::FusedAttentionBackward(const FusedAttentionDesc& d, const float* q,
                                            const float* k, const float* v, const float* out,
                                            const float* lse, const float* dout, float* dq,
                                            float* dk, float* dv, float* dbias_table) {
  TVLAB_CHECK(!d.has_bucket_bias() || dbias_table != nullptr) << "a bucket bias needs dbias_table";
  Tensor tables;
  const cuda::FusedAttentionParams p = MakeParams(d, &tables);
  // D_i = dout_i . out_i per row (B, H, T).
  Tensor row_dot = Tensor::Empty({std::max<int64_t>(d.batch * d.heads * d.queries, 1)},
                                 Device::kCuda);
  // The bucketed bias's gradient per (head, distance) (H, T + S - 1).
  Tensor distance_grad;
  if (p.distance_bias != nullptr)
    distance_grad = Tensor::Empty({std::max<int64_t>(d.heads * p.distance_span, 1)}, Device::kCuda);
  const std::string error = cuda::LaunchFusedAttentionBackward(
      p, q, k, v, out, lse, dout, dq, dk, dv, row_dot.ptr(), dbias_table,
      p.distance_bias != nullptr ? distance_grad.ptr() : nullptr);
  TVLAB_CHECK(error.empty()) << error;
}

}  // namespace tvlab
