// The heads-in-lanes short attention kernel's AVX2 build
// (short_attention_heads_avx2.h): eight query heads a block, one in each
// lane, and each step the AVX-512 build's (short_attention_heads_avx512.cc)
// on eight lanes with the same IEEE operations in each lane.

#include "framework/backend/cpu_onednn/short_attention_heads_avx2.h"

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx2_rows.h"
#include "framework/backend/cpu_onednn/short_attention_heads_driver.h"
#include "framework/core/check.h"
#include "framework/core/cpu_features.h"

namespace tvlab {
namespace onednn {
namespace heads_avx2 {
namespace {

using heads_in_lanes::Buffers;
using heads_in_lanes::KeySpan;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// acc[j] = row i of xt . row j of yt for j < kS (xt's rows and yt's of width).
template <int kS>
TVLAB_HEADS_AVX2_INLINE void Dots(const float* xt, int64_t i, const float* yt, int64_t width, __m256* acc) {
  for (int j = 0; j < kS; ++j) acc[j] = _mm256_setzero_ps();
  for (int64_t e = 0; e < width; ++e) {
    const __m256 x = _mm256_load_ps(xt + (i * width + e) * kLanes);
    for (int j = 0; j < kS; ++j) acc[j] = _mm256_fmadd_ps(x, _mm256_load_ps(yt + (j * width + e) * kLanes), acc[j]);
  }
}

// Query i's logits in lanes: scale * q . k_j for its visible keys, -inf for
// the rest.
template <int kS>
TVLAB_HEADS_AVX2_INLINE void Logits(const FusedAttentionDesc& d, const Buffers& b, int64_t i, KeySpan span, __m256* x) {
  Dots<kS>(b.q, i, b.k, d.head_dim, x);
  for (int j = 0; j < kS; ++j)
    x[j] = j >= span.first && j < span.end ? _mm256_mul_ps(x[j], _mm256_set1_ps(d.scale)) : _mm256_set1_ps(kNegInf);
}

// The dropout factor of query i and key j (visible, so j < S) in lanes.
TVLAB_HEADS_AVX2_INLINE __m256 Keep(const FusedAttentionDesc& d, const Buffers& b, int64_t i, int j) {
  return b.keep == nullptr ? _mm256_set1_ps(1.0f) : _mm256_load_ps(b.keep + (i * d.keys + j) * kLanes);
}

struct MaxOf {
  TVLAB_HEADS_AVX2_INLINE __m256 operator()(__m256 a, __m256 b) const { return _mm256_max_ps(a, b); }
};
struct SumOf {
  TVLAB_HEADS_AVX2_INLINE __m256 operator()(__m256 a, __m256 b) const { return _mm256_add_ps(a, b); }
};

// op over x[0 .. kS) as a tree (log2 kS steps, not kS - 1 in a chain).
template <int kS, typename Op>
TVLAB_HEADS_AVX2_INLINE __m256 Tree(const __m256* x, Op op) {
  __m256 y[kS];
  for (int j = 0; j < kS; ++j) y[j] = x[j];
  for (int half = kS / 2; half >= 1; half /= 2)
    for (int j = 0; j < half; ++j) y[j] = op(y[j], y[j + half]);
  return y[0];
}

// lse, 1 / sum and the weights exp(logit - max) keep (0 for hidden keys) in
// lanes: softmax over the visible keys and the sink. A lane mask here is a
// vector of all-ones or zero lanes (AVX-512's k registers: the blends and
// ands below do what its masked moves do).
template <int kS>
TVLAB_HEADS_AVX2 void ForwardRows(const FusedAttentionDesc& d, const KeySpan* spans, const float* sinks,
                                  const Buffers& b) {
  const __m256 sink = _mm256_load_ps(sinks);
  for (int64_t i = 0; i < d.queries; ++i) {
    __m256 x[kS];
    Logits<kS>(d, b, i, spans[i], x);
    const __m256 max = _mm256_max_ps(sink, Tree<kS>(x, MaxOf{}));
    const __m256 none = _mm256_cmp_ps(max, _mm256_set1_ps(kNegInf), _CMP_EQ_OQ);  // no key, no sink
    const __m256 shift = _mm256_andnot_ps(none, max);
    for (int j = 0; j < kS; ++j)
      x[j] = j >= spans[i].first && j < spans[i].end ? Exp(_mm256_sub_ps(x[j], shift)) : _mm256_setzero_ps();
    __m256 sum = Tree<kS>(x, SumOf{});
    if (d.has_sink()) sum = _mm256_add_ps(sum, Exp(_mm256_sub_ps(sink, shift)));
    for (int j = 0; j < kS; ++j)
      if (j >= spans[i].first && j < spans[i].end) x[j] = _mm256_mul_ps(x[j], Keep(d, b, i, j));
    const __m256 safe_sum = _mm256_blendv_ps(sum, _mm256_set1_ps(1.0f), none);
    _mm256_store_ps(b.lse + i * kLanes, _mm256_blendv_ps(_mm256_add_ps(shift, Log(safe_sum)), max, none));
    _mm256_store_ps(b.inv_sum + i * kLanes, _mm256_andnot_ps(none, _mm256_div_ps(_mm256_set1_ps(1.0f), safe_sum)));
    for (int j = 0; j < kS; ++j) _mm256_store_ps(b.kept + (i * kS + j) * kLanes, x[j]);
  }
}

// For every query i: ds_ij = p_ij (keep_ij dout_i . v_j - D_i) scale into
// b.grads and p_ij keep_ij into b.kept (0 for hidden keys), D_i = sum_j
// p_ij keep_ij dout_i . v_j (the AVX-512 build's BackwardRows).
template <int kS>
TVLAB_HEADS_AVX2 void BackwardRows(const FusedAttentionDesc& d, const KeySpan* spans, const Buffers& b) {
  for (int64_t i = 0; i < d.queries; ++i) {
    __m256 p[kS], dp[kS], kept_dp[kS];
    Dots<kS>(b.dout, i, b.v, d.value_dim, dp);
    Logits<kS>(d, b, i, spans[i], p);
    const __m256 lse = _mm256_load_ps(b.lse + i * kLanes);
    const __m256 live = _mm256_cmp_ps(lse, _mm256_set1_ps(kNegInf), _CMP_NEQ_OQ);  // rows with a weight
    __m256 products[kS];
    for (int j = 0; j < kS; ++j) {
      const bool visible = j >= spans[i].first && j < spans[i].end;
      p[j] = visible ? _mm256_and_ps(live, Exp(_mm256_sub_ps(p[j], lse))) : _mm256_setzero_ps();
      const __m256 keep = visible ? Keep(d, b, i, j) : _mm256_setzero_ps();
      _mm256_store_ps(b.kept + (i * kS + j) * kLanes, _mm256_mul_ps(p[j], keep));
      kept_dp[j] = _mm256_mul_ps(keep, dp[j]);
      products[j] = _mm256_mul_ps(p[j], kept_dp[j]);
    }
    const __m256 big_d = Tree<kS>(products, SumOf{});
    for (int j = 0; j < kS; ++j)
      _mm256_store_ps(b.grads + (i * kS + j) * kLanes,
                      _mm256_mul_ps(_mm256_mul_ps(p[j], _mm256_sub_ps(kept_dp[j], big_d)), _mm256_set1_ps(d.scale)));
  }
}

// The AVX2 build's steps, as short_attention_heads_driver.h names them.
struct Avx2 {
  static constexpr int kLanes = heads_avx2::kLanes;
  static constexpr auto IntoLanes = &heads_avx2::IntoLanes;
  static constexpr auto FromLanes = &heads_avx2::FromLanes;
  template <int kS>
  static constexpr auto ForwardRows = &heads_avx2::ForwardRows<kS>;
  template <int kS>
  static constexpr auto BackwardRows = &heads_avx2::BackwardRows<kS>;
  template <int kS>
  static constexpr auto MixRows = &heads_avx2::MixRows<kS>;
  template <int kS>
  static constexpr auto SumRows = &heads_avx2::SumRows<kS>;
};

}  // namespace
}  // namespace heads_avx2

bool HeadsInLanesAvx2Takes(const FusedAttentionDesc& d) {
  return CpuHasAvx2Fma() && IsShortAttention(d) && heads_in_lanes::Takes<heads_avx2::kLanes>(d);
}

void HeadsInLanesForwardAvx2(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                             float* lse) {
  TVLAB_CHECK(HeadsInLanesAvx2Takes(d)) << "HeadsInLanesForwardAvx2";
  heads_in_lanes::ForwardAnyKeys<heads_avx2::Avx2>(d, q, k, v, out, lse);
}

void HeadsInLanesBackwardAvx2(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                              const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  TVLAB_CHECK(HeadsInLanesAvx2Takes(d)) << "HeadsInLanesBackwardAvx2";
  (void)out;  // dout . out from the weights instead (BackwardRows)
  heads_in_lanes::BackwardAnyKeys<heads_avx2::Avx2>(d, {q, k, v, lse, dout, dq, dk, dv});
}

}  // namespace onednn
}  // namespace tvlab
