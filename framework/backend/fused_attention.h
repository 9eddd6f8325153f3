#ifndef TVLAB_FRAMEWORK_BACKEND_FUSED_ATTENTION_H_
#define TVLAB_FRAMEWORK_BACKEND_FUSED_ATTENTION_H_

// FusedAttentionDesc: what a fused attention kernel computes, as a
// description. Per batch row b, query head h (key/value head
// g = h / (H / G)), query i and key j:
//
//   logit[i, j] = scale * q[b, h, i] . k[b, g, j]
//                 - alibi_slopes[h] * |alibi_offset + i - j|   (if slopes given)
//                 + bucket_bias.table[bucket(j - (bucket_bias.query_offset + i)), h]
//                                                       (if a bucket table is given)
//   logit[i, j] = c * tanh(logit[i, j] / c)   (soft-cap, if logit_softcap c > 0)
//                 masked to -inf where `mask` hides key j from query i
//   p[i, :]     = softmax(logit[i, :])       (all-hidden row: p = 0)
//   out[b,h,i]  = sum_j p[i, j] * keep[b, h, i, j] * v[b, g, j]
//
// With sink_logits (H numbers), the softmax has one more entry per row, the
// sink's logit sink_logits[h], whose value is zero: p[i, j] =
// exp(logit[i, j] - lse[i]) with lse[i] = log(exp(sink_logits[h]) +
// sum_j exp(logit[i, j])); an all-hidden row has lse = sink_logits[h] and
// out = 0. The backward needs nothing more (it reads lse); the sink's own
// gradient comes from lse, out and dout (autograd's FusedAttention).
//
// keep = Backend::DropoutMask(*dropout_stream, dropout) over the (B, H, T, S)
// weights in row-major order (1 when dropout is 0): the unfused path's
// Dropout draws exactly this mask, so fused and unfused agree bit for bit in
// the random choices. No (T, S) matrix is ever materialised: kernels keep
// only the per-row log-sum-exp `lse` (B, H, T) for the backward, which
// recomputes the probabilities tile by tile.
//
// Layouts (contiguous, row-major): q (B, H, T, hs), k (B, G, S, hs),
// v (B, G, S, hs_v), out (B, H, T, hs_v), lse (B, H, T). Shared K/V heads
// (GQA, MQA) are read by index, never copied. With token_major, q, k, v and
// out (and the backward's dq, dk, dv, dout) are (B, T, H, hs),
// (B, S, G, hs), (B, S, G, hs_v), (B, T, H, hs_v) instead: every token's
// heads side by side, as the projections write them, so that no head
// permute runs around the call. lse, the dropout order and everything else
// stay as above. Only a backend whose PrefersTokenMajorFusedAttention(d)
// holds is given token_major (and the reference, the oracle).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "framework/backend/attention_mask.h"
#include "framework/backend/precision.h"
#include "framework/backend/relative_buckets.h"
#include "framework/core/check.h"
#include "framework/core/rng.h"

namespace tvlab {

// A bucketed relative position bias: a learned table and its bucket rule.
struct BucketedLogitBias {
  std::vector<float> table;  // (num_buckets, H) row-major, or empty for none
  RelativeBucketRule rule;
  int64_t query_offset = 0;  // position of query 0; keys sit at 0 .. S-1
};

struct FusedAttentionDesc {
  int64_t batch = 0;      // B
  int64_t heads = 0;      // H query heads
  int64_t kv_heads = 0;   // G key/value heads, G divides H
  int64_t queries = 0;    // T
  int64_t keys = 0;       // S
  int64_t head_dim = 0;   // hs of q and k
  int64_t value_dim = 0;  // hs_v of v and out
  float scale = 1.0f;
  AttentionMask mask;
  std::vector<double> alibi_slopes;  // H slopes, or empty for no bias
  int64_t alibi_offset = 0;          // position of query 0 for the bias
  float logit_softcap = 0.0f;        // c of the soft-cap; 0 = none
  std::vector<float> sink_logits;    // H sink logits, or empty for no sink
  BucketedLogitBias bucket_bias;     // empty table: no bucketed bias
  float dropout = 0.0f;              // probability of dropping a weight
  std::optional<RngStream> dropout_stream;  // required when dropout > 0
  // runtime.precision of the products (q.k, weights.v and their gradients).
  // kBf16 lets a backend round q, k, v, dout, the weights and dS to bf16
  // where they enter a product, accumulating in fp32 (gpu_cuda's tensor-core
  // kernels do); computing in fp32 is always within the contract.
  Precision precision = Precision::kFp32;
  bool token_major = false;  // the layouts above

  int64_t group_size() const { return heads / kv_heads; }
  // Row of query i of head h of batch row b in q, out, dq and dout (times
  // head_dim or value_dim: the offset of its first element).
  int64_t QueryRow(int64_t b, int64_t h, int64_t i) const {
    return token_major ? (b * queries + i) * heads + h : (b * heads + h) * queries + i;
  }
  // Row of key j of key/value head g of batch row b in k, v, dk and dv.
  int64_t KeyRow(int64_t b, int64_t g, int64_t j) const {
    return token_major ? (b * keys + j) * kv_heads + g : (b * kv_heads + g) * keys + j;
  }
  // Rows from query i to query i + 1 of one head, and from key j to j + 1.
  int64_t QueryRowStep() const { return token_major ? heads : 1; }
  int64_t KeyRowStep() const { return token_major ? kv_heads : 1; }
  // Stops the process on a desc no caller should build (Attend derives
  // every field from tensors and validated plugins; not user input).
  void CheckConsistent() const {
    TVLAB_CHECK(kv_heads > 0 && heads % kv_heads == 0)
        << kv_heads << " key/value heads for " << heads << " query heads";
    TVLAB_CHECK(alibi_slopes.empty() || static_cast<int64_t>(alibi_slopes.size()) == heads);
    TVLAB_CHECK(sink_logits.empty() || static_cast<int64_t>(sink_logits.size()) == heads);
    TVLAB_CHECK(!has_bucket_bias() ||
                static_cast<int64_t>(bucket_bias.table.size()) == bucket_bias.rule.num_buckets * heads)
        << bucket_bias.table.size() << " bucket-bias numbers for " << bucket_bias.rule.num_buckets
        << " buckets x " << heads << " heads";
    TVLAB_CHECK(logit_softcap >= 0.0f) << "logit_softcap " << logit_softcap;
    TVLAB_CHECK(dropout <= 0.0f || dropout_stream.has_value()) << "dropout needs a stream";
    TVLAB_CHECK(mask.key_lengths.empty() || static_cast<int64_t>(mask.key_lengths.size()) == batch);
    if (mask.has_documents()) {  // self-attention over the tables' positions (attention_mask.h)
      TVLAB_CHECK(mask.document_positions == keys &&
                  static_cast<int64_t>(mask.document_begin.size()) == batch * keys &&
                  mask.document_end.size() == mask.document_begin.size())
          << "document tables of " << mask.document_positions << " positions for " << keys << " keys";
      TVLAB_CHECK(mask.causal_offset >= 0 && mask.causal_offset + queries <= keys)
          << "queries at " << mask.causal_offset << " .. " << mask.causal_offset + queries
          << " outside the documents' " << keys << " positions";
    }
  }
  // Whether key j is visible to query i of batch row b.
  bool Visible(int64_t b, int64_t i, int64_t j) const { return mask.Visible(b, i, j, keys); }
  // Keys [VisibleBegin(b, i), VisibleEnd(b, i)) may be visible to query i of
  // row b; none outside. Both ends never decrease with i (attention_mask.h).
  int64_t VisibleBegin(int64_t b, int64_t i) const { return mask.VisibleBegin(b, i); }
  int64_t VisibleEnd(int64_t b, int64_t i) const { return mask.VisibleEnd(b, i, keys); }
  // The soft-cap of a logit (unchanged when logit_softcap is 0), and the
  // derivative of the capped logit by the uncapped one, given the capped.
  float SoftCap(float logit) const {
    return logit_softcap > 0.0f ? logit_softcap * std::tanh(logit * (1.0f / logit_softcap)) : logit;
  }
  float SoftCapSlope(float capped) const {
    if (logit_softcap <= 0.0f) return 1.0f;
    const float t = capped * (1.0f / logit_softcap);
    return 1.0f - t * t;
  }
  bool has_sink() const { return !sink_logits.empty(); }
  bool has_bucket_bias() const { return !bucket_bias.table.empty(); }
  // Relative distances index the bias as j - i + T - 1 in [0, T + S - 1)
  // (key j, query i; the query offset cancels out of the index).
  int64_t distance_span() const { return std::max<int64_t>(queries + keys - 1, 0); }
  // The bucket of every distance index: (T + S - 1).
  std::vector<int32_t> DistanceBuckets() const;
  // bias[h * (T + S - 1) + j - i + T - 1] = the bucketed bias of (h, i, j):
  // (H, T + S - 1). REQUIRES: has_bucket_bias().
  std::vector<float> DistanceBias() const;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_FUSED_ATTENTION_H_
