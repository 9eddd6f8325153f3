// The short attention kernel with sixteen query heads in the lanes
// (short_attention_heads_avx512.h). Every buffer here is a block's tensor
// in lanes: vector (r * width + e) of `xt` holds element e of row r of the
// sixteen heads, lane l for query head n0 + l.

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn that
// it "may be used uninitialized" (a false positive in the header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "framework/backend/cpu_onednn/short_attention_heads_avx512.h"

#include <immintrin.h>

#include <cstdint>

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx512_rows.h"
#include "framework/backend/cpu_onednn/short_attention_heads_driver.h"
#include "framework/core/check.h"

namespace tvlab {
namespace onednn {
namespace heads_avx512 {
namespace {

using short_avx512::Exp;
using short_avx512::kNegInf;
using short_avx512::Log;

using heads_in_lanes::Buffers;
using heads_in_lanes::KeySpan;

// acc[j] = row i of xt . row j of yt for j < kS (xt's rows and yt's of width).
template <int kS>
TVLAB_HEADS_INLINE void Dots(const float* xt, int64_t i, const float* yt, int64_t width, __m512* acc) {
  for (int j = 0; j < kS; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t e = 0; e < width; ++e) {
    const __m512 x = _mm512_load_ps(xt + (i * width + e) * kLanes);
    for (int j = 0; j < kS; ++j) acc[j] = _mm512_fmadd_ps(x, _mm512_load_ps(yt + (j * width + e) * kLanes), acc[j]);
  }
}

// Query i's logits in lanes: scale * q . k_j for its visible keys, -inf for
// the rest.
template <int kS>
TVLAB_HEADS_INLINE void Logits(const FusedAttentionDesc& d, const Buffers& b, int64_t i, KeySpan span, __m512* x) {
  Dots<kS>(b.q, i, b.k, d.head_dim, x);
  for (int j = 0; j < kS; ++j)
    x[j] = j >= span.first && j < span.end ? _mm512_mul_ps(x[j], _mm512_set1_ps(d.scale)) : _mm512_set1_ps(kNegInf);
}

// The dropout factor of query i and key j (visible, so j < S) in lanes.
TVLAB_HEADS_INLINE __m512 Keep(const FusedAttentionDesc& d, const Buffers& b, int64_t i, int j) {
  return b.keep == nullptr ? _mm512_set1_ps(1.0f) : _mm512_load_ps(b.keep + (i * d.keys + j) * kLanes);
}

// op over x[0 .. kS) as a tree (log2 kS steps, not kS - 1 in a chain).
template <int kS, typename Op>
TVLAB_HEADS_INLINE __m512 Tree(const __m512* x, Op op) {
  __m512 y[kS];
  for (int j = 0; j < kS; ++j) y[j] = x[j];
  for (int half = kS / 2; half >= 1; half /= 2)
    for (int j = 0; j < half; ++j) y[j] = op(y[j], y[j + half]);
  return y[0];
}

// lse, 1 / sum and the weights exp(logit - max) keep (0 for hidden keys) in
// lanes: softmax over the visible keys and the sink.
template <int kS>
TVLAB_HEADS void ForwardRows(const FusedAttentionDesc& d, const KeySpan* spans, const float* sinks, const Buffers& b) {
  const __m512 sink = _mm512_load_ps(sinks);
  for (int64_t i = 0; i < d.queries; ++i) {
    __m512 x[kS];
    Logits<kS>(d, b, i, spans[i], x);
    const __m512 max = _mm512_max_ps(sink, Tree<kS>(x, short_avx512::MaxOf{}));
    const __mmask16 none = _mm512_cmp_ps_mask(max, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ);  // no key, no sink
    const __m512 shift = _mm512_mask_mov_ps(max, none, _mm512_setzero_ps());
    for (int j = 0; j < kS; ++j)
      x[j] = j >= spans[i].first && j < spans[i].end ? Exp(_mm512_sub_ps(x[j], shift)) : _mm512_setzero_ps();
    __m512 sum = Tree<kS>(x, short_avx512::SumOf{});
    if (d.has_sink()) sum = _mm512_add_ps(sum, Exp(_mm512_sub_ps(sink, shift)));
    for (int j = 0; j < kS; ++j)
      if (j >= spans[i].first && j < spans[i].end) x[j] = _mm512_mul_ps(x[j], Keep(d, b, i, j));
    const __m512 safe_sum = _mm512_mask_mov_ps(sum, none, _mm512_set1_ps(1.0f));
    _mm512_store_ps(b.lse + i * kLanes, _mm512_mask_mov_ps(_mm512_add_ps(shift, Log(safe_sum)), none, max));
    _mm512_store_ps(b.inv_sum + i * kLanes, _mm512_maskz_div_ps(~none, _mm512_set1_ps(1.0f), safe_sum));
    for (int j = 0; j < kS; ++j) _mm512_store_ps(b.kept + (i * kS + j) * kLanes, x[j]);
  }
}

// For every query i: ds_ij = p_ij (keep_ij dout_i . v_j - D_i) scale into
// b.grads and p_ij keep_ij into b.kept (0 for hidden keys). D_i = dout_i .
// out_i = sum_j p_ij keep_ij dout_i . v_j (out_i = sum_j p_ij keep_ij v_j),
// from what is in registers already instead of out in lanes.
template <int kS>
TVLAB_HEADS void BackwardRows(const FusedAttentionDesc& d, const KeySpan* spans, const Buffers& b) {
  for (int64_t i = 0; i < d.queries; ++i) {
    __m512 p[kS], dp[kS], kept_dp[kS];
    Dots<kS>(b.dout, i, b.v, d.value_dim, dp);
    Logits<kS>(d, b, i, spans[i], p);
    const __m512 lse = _mm512_load_ps(b.lse + i * kLanes);
    const __mmask16 live = _mm512_cmp_ps_mask(lse, _mm512_set1_ps(kNegInf), _CMP_NEQ_OQ);  // rows with a weight
    __m512 products[kS];
    for (int j = 0; j < kS; ++j) {
      const bool visible = j >= spans[i].first && j < spans[i].end;
      p[j] = visible ? _mm512_maskz_mov_ps(live, Exp(_mm512_sub_ps(p[j], lse))) : _mm512_setzero_ps();
      const __m512 keep = visible ? Keep(d, b, i, j) : _mm512_setzero_ps();
      _mm512_store_ps(b.kept + (i * kS + j) * kLanes, _mm512_mul_ps(p[j], keep));
      kept_dp[j] = _mm512_mul_ps(keep, dp[j]);
      products[j] = _mm512_mul_ps(p[j], kept_dp[j]);
    }
    const __m512 big_d = Tree<kS>(products, short_avx512::SumOf{});
    for (int j = 0; j < kS; ++j)
      _mm512_store_ps(b.grads + (i * kS + j) * kLanes,
                      _mm512_mul_ps(_mm512_mul_ps(p[j], _mm512_sub_ps(kept_dp[j], big_d)), _mm512_set1_ps(d.scale)));
  }
}

// The AVX-512 build's steps, as short_attention_heads_driver.h names them.
struct Avx512 {
  static constexpr int kLanes = heads_avx512::kLanes;
  static constexpr auto IntoLanes = &heads_avx512::IntoLanes;
  static constexpr auto FromLanes = &heads_avx512::FromLanes;
  template <int kS>
  static constexpr auto ForwardRows = &heads_avx512::ForwardRows<kS>;
  template <int kS>
  static constexpr auto BackwardRows = &heads_avx512::BackwardRows<kS>;
  template <int kS>
  static constexpr auto MixRows = &heads_avx512::MixRows<kS>;
  template <int kS>
  static constexpr auto SumRows = &heads_avx512::SumRows<kS>;
};

}  // namespace
}  // namespace heads_avx512

bool HeadsInLanesTakes(const FusedAttentionDesc& d) { return heads_in_lanes::Takes<heads_avx512::kLanes>(d); }

void HeadsInLanesForward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                         float* lse) {
  TVLAB_CHECK(HeadsInLanesTakes(d) && IsShortAttention(d)) << "HeadsInLanesForward";
  heads_in_lanes::ForwardAnyKeys<heads_avx512::Avx512>(d, q, k, v, out, lse);
}

void HeadsInLanesBackward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                          const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  TVLAB_CHECK(HeadsInLanesTakes(d) && IsShortAttention(d)) << "HeadsInLanesBackward";
  (void)out;  // dout . out from the weights instead (BackwardRows)
  heads_in_lanes::BackwardAnyKeys<heads_avx512::Avx512>(d, {q, k, v, lse, dout, dq, dk, dv});
}

}  // namespace onednn
}  // namespace tvlab
