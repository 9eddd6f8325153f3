// The reference fused attention: one query row at a time, in plain loops,
// holding one row of S logits (memory linear in S, never a (T, S) matrix).
// Written for clarity; it is the oracle the fast kernels are tested against
// (backend_conformance_test.cc), and fused_attention_test.cc checks it
// against the unfused composition of the other kernels.

#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/reference/reference_backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float Dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t c = 0; c < n; ++c) sum += a[c] * b[c];
  return sum;
}

// Inverted-dropout factors of weights [first, first + n) in the (B, H, T, S)
// order of Backend::DropoutMask: 0 or 1 / (1 - p).
void KeepFactors(const FusedAttentionDesc& d, int64_t first, int64_t n, float* keep) {
  if (d.dropout <= 0.0f) {
    std::fill(keep, keep + n, 1.0f);
    return;
  }
  std::vector<uint32_t> words;
  DropoutFactors(*d.dropout_stream, d.dropout, first, n, keep, words);
}

// Logits of query i of (b, h) against every key (-inf where hidden).
// distance_bias: DistanceBias() (H, T + S - 1) with a bucketed bias, else
// null.
void RowLogits(const FusedAttentionDesc& d, const float* q, const float* k,
               const float* distance_bias, int64_t b, int64_t h, int64_t i, float* logits) {
  const int64_t g = h / d.group_size();
  const float* qi = q + d.QueryRow(b, h, i) * d.head_dim;
  for (int64_t j = 0; j < d.keys; ++j) {
    if (!d.Visible(b, i, j)) {
      logits[j] = kNegInf;
      continue;
    }
    float l = d.scale * Dot(qi, k + d.KeyRow(b, g, j) * d.head_dim, d.head_dim);
    if (!d.alibi_slopes.empty())
      l -= static_cast<float>(d.alibi_slopes[h] * std::abs(d.alibi_offset + i - j));
    if (distance_bias != nullptr) l += distance_bias[h * d.distance_span() + j - i + d.queries - 1];
    logits[j] = d.SoftCap(l);
  }
}

}  // namespace

void ReferenceBackend::FusedAttention(const FusedAttentionDesc& d, const float* q,
                                      const float* k, const float* v, float* out, float* lse) {
  d.CheckConsistent();
  std::vector<float> logits(d.keys), keep(d.keys);
  const std::vector<float> distance_bias = d.has_bucket_bias() ? d.DistanceBias() : std::vector<float>();
  const float* bias = d.has_bucket_bias() ? distance_bias.data() : nullptr;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      const int64_t g = h / d.group_size();
      for (int64_t i = 0; i < d.queries; ++i) {
        const int64_t row = (b * d.heads + h) * d.queries + i;  // of lse and the dropout order
        float* o = out + d.QueryRow(b, h, i) * d.value_dim;
        std::fill(o, o + d.value_dim, 0.0f);
        RowLogits(d, q, k, bias, b, h, i, logits.data());
        const float sink = d.has_sink() ? d.sink_logits[h] : kNegInf;
        float max = sink;
        for (float l : logits) max = std::max(max, l);
        if (max == kNegInf) {  // no visible key and no sink
          lse[row] = kNegInf;
          continue;
        }
        double sum = d.has_sink() ? std::exp(static_cast<double>(sink - max)) : 0.0;
        for (float l : logits) sum += std::exp(static_cast<double>(l - max));
        const float row_lse = max + static_cast<float>(std::log(sum));
        lse[row] = row_lse;
        KeepFactors(d, row * d.keys, d.keys, keep.data());
        for (int64_t j = 0; j < d.keys; ++j) {
          if (logits[j] == kNegInf) continue;
          const float p = std::exp(logits[j] - row_lse) * keep[j];
          const float* vj = v + d.KeyRow(b, g, j) * d.value_dim;
          for (int64_t c = 0; c < d.value_dim; ++c) o[c] += p * vj[c];
        }
      }
    }
}

// With P the softmax weights, M the dropout factors and W = P * M:
//   dv_j += W_ij dout_i;  dW_ij = dout_i . v_j;
//   dlogit_ij = P_ij (M_ij dW_ij - D_i),  D_i = sum_j W_ij dW_ij = dout_i . out_i;
//   dq_i += scale cap'_ij dlogit_ij k_j;  dk_j += scale cap'_ij dlogit_ij q_i,
// cap' the soft-cap's slope (1 without one). A sink changes only lse. The
// bucketed bias's table: d table[bucket(i, j), h] += P_ij (M_ij dW_ij - D_i) cap'_ij.
void ReferenceBackend::FusedAttentionBackward(const FusedAttentionDesc& d, const float* q,
                                              const float* k, const float* v,
                                              const float* out, const float* lse,
                                              const float* dout, float* dq, float* dk,
                                              float* dv, float* dbias_table) {
  d.CheckConsistent();
  TVLAB_CHECK(!d.has_bucket_bias() || dbias_table != nullptr) << "a bucket bias needs dbias_table";
  std::fill(dq, dq + d.batch * d.heads * d.queries * d.head_dim, 0.0f);
  std::fill(dk, dk + d.batch * d.kv_heads * d.keys * d.head_dim, 0.0f);
  std::fill(dv, dv + d.batch * d.kv_heads * d.keys * d.value_dim, 0.0f);
  std::vector<float> logits(d.keys), keep(d.keys);
  const std::vector<float> distance_bias = d.has_bucket_bias() ? d.DistanceBias() : std::vector<float>();
  const float* bias = d.has_bucket_bias() ? distance_bias.data() : nullptr;
  const std::vector<int32_t> buckets = d.has_bucket_bias() ? d.DistanceBuckets() : std::vector<int32_t>();
  if (bias != nullptr) std::fill(dbias_table, dbias_table + d.bucket_bias.table.size(), 0.0f);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      const int64_t g = h / d.group_size();
      for (int64_t i = 0; i < d.queries; ++i) {
        const int64_t row = (b * d.heads + h) * d.queries + i;  // of lse and the dropout order
        if (lse[row] == kNegInf) continue;  // saw no key: no gradient
        const int64_t qrow = d.QueryRow(b, h, i);
        const float* qi = q + qrow * d.head_dim;
        const float* doi = dout + qrow * d.value_dim;
        float* dqi = dq + qrow * d.head_dim;
        const float big_d = Dot(doi, out + qrow * d.value_dim, d.value_dim);
        RowLogits(d, q, k, bias, b, h, i, logits.data());
        KeepFactors(d, row * d.keys, d.keys, keep.data());
        for (int64_t j = 0; j < d.keys; ++j) {
          if (logits[j] == kNegInf) continue;
          const float p = std::exp(logits[j] - lse[row]);
          const int64_t krow = d.KeyRow(b, g, j);
          const float* kj = k + krow * d.head_dim;
          float* dkj = dk + krow * d.head_dim;
          float* dvj = dv + krow * d.value_dim;
          for (int64_t c = 0; c < d.value_dim; ++c) dvj[c] += p * keep[j] * doi[c];
          const float dw = Dot(doi, v + krow * d.value_dim, d.value_dim);
          const float dbias = p * (keep[j] * dw - big_d) * d.SoftCapSlope(logits[j]);
          if (bias != nullptr) dbias_table[buckets[j - i + d.queries - 1] * d.heads + h] += dbias;
          const float dlogit = dbias * d.scale;
          for (int64_t c = 0; c < d.head_dim; ++c) {
            dqi[c] += dlogit * kj[c];
            dkj[c] += dlogit * qi[c];
          }
        }
      }
    }
}

}  // namespace tvlab
