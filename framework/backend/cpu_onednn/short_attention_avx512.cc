// The short fused attention kernel on AVX-512F (short_attention_avx512.h).

// GCC 12's AVX-512 intrinsics (the reductions, getmant) start from
// _mm512_undefined_*() and warn that it "may be used uninitialized" (a
// false positive in the header; the pragma comes before it is included).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "framework/backend/cpu_onednn/short_attention_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx512.h"
#include "framework/core/check.h"
#include "framework/core/cpu_features.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace onednn {
namespace short_avx512 {
namespace {

// Below this many multiply-adds the kernel runs on one thread (as the
// portable kernel's).
constexpr int64_t kParallelMacs = int64_t{1} << 22;

// A key/value head's keys or values (s rows of width, ldx apart),
// transposed into lanes: (width, kLanes).
struct Transposed {
  std::vector<float> xt;
  void Fill(const float* x, int64_t ldx, int64_t s, int64_t width) {
    xt.resize(static_cast<size_t>(width * kLanes));
    TransposeKeys(x, ldx, s, width, xt.data());
  }
};

// One thread's buffers, grown as needed and kept across calls.
struct Scratch {
  Transposed kt, vt;            // a key/value head's keys, values: (width, kLanes)
  std::vector<float> a, b;      // a query head's rows: (T, kLanes) each
  std::vector<float> keep;      // dropout factors of a task's heads, then kLanes zeros
  std::vector<uint32_t> words;  // DropoutFactors' scratch
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// What one query head's rows read and write. Query i is row q0 + i * qstep
// of q, out, dq and dout; key j of its key/value head row k0 + j * kstep
// of k, v, dk and dv (fused_attention.h: head- or token-major).
struct Head {
  const FusedAttentionDesc* d;
  int64_t b, h;
  int64_t lse0;          // its query 0's entry of lse, (b * H + h) * T
  int64_t q0, qstep;     // rows of its queries
  int64_t k0, kstep;     // rows of its key/value head's keys
  const float *kt, *vt;  // its key/value head's keys and values in lanes
  const float* keep;     // its dropout factors (T, S), or null
  Scratch* scratch;
  bool unmasked;  // every query sees every key
  int64_t QueryOffset(int64_t i, int64_t width) const { return (q0 + i * qstep) * width; }
  int64_t KeyOffset(int64_t width) const { return k0 * width; }
};

bool Unmasked(const AttentionMask& m) {
  return !m.causal && m.key_lengths.empty() && m.window <= 0 && !m.has_documents();
}

// The keys query i of row b sees, as lanes.
TVLAB_AVX512_INLINE __mmask16 VisibleLanes(const FusedAttentionDesc& d, bool unmasked, int64_t b, int64_t i) {
  if (unmasked) return Columns(0, d.keys);
  const int64_t first = std::clamp<int64_t>(d.VisibleBegin(b, i), 0, d.keys);
  const int64_t end = std::clamp<int64_t>(d.VisibleEnd(b, i), first, d.keys);
  return __mmask16(((1u << end) - 1) & ~((1u << first) - 1));
}

// Keys [first, end) of the lanes any of `lanes` has.
struct KeySpan {
  int64_t first = 0, end = 0;
};
KeySpan SpanOf(unsigned lanes) {
  if (lanes == 0) return {};
  return {__builtin_ctz(lanes), 32 - __builtin_clz(lanes)};
}

// Row r's dropout factors (zeros past S), or ones without dropout.
TVLAB_AVX512_INLINE __m512 KeepRow(const Head& hd, int64_t i) {
  if (hd.keep == nullptr) return _mm512_set1_ps(1.0f);
  return _mm512_maskz_loadu_ps(Columns(0, hd.d->keys), hd.keep + i * hd.d->keys);
}


// One query row's softmax statistics, for rows that do not come in eights:
// lse, and the weights exp(logit - max) (0 for hidden keys) and 1 / sum.
TVLAB_AVX512_INLINE __m512 RowWeights(const FusedAttentionDesc& d, float sink, __mmask16 visible, __m512 logits,
                                      float* inv_sum, float* lse) {
  const float max = std::max(sink, _mm512_reduce_max_ps(logits));
  const float shift = max == kNegInf ? 0.0f : max;
  const __m512 e = _mm512_maskz_mov_ps(visible, Exp(_mm512_sub_ps(logits, _mm512_set1_ps(shift))));
  const float sum = _mm512_reduce_add_ps(e) + (d.has_sink() ? std::exp(sink - max) : 0.0f);
  *inv_sum = max == kNegInf ? 0.0f : 1.0f / sum;  // no key and no sink: out 0
  *lse = max == kNegInf ? kNegInf : max + std::log(sum);
  return e;
}

// The same for eight rows at once, with the vector Fold, Exp and Log.
TVLAB_AVX512_INLINE void EightRowWeights(const FusedAttentionDesc& d, float sink, const __mmask16* visible,
                                         __m512* logits, float* inv_sum, float* lse) {
  const __m512 max = _mm512_max_ps(_mm512_set1_ps(sink), Fold(logits, MaxOf{}));
  const __mmask16 none = _mm512_cmp_ps_mask(max, _mm512_set1_ps(kNegInf), _CMP_EQ_OQ);
  const __m512 shift = _mm512_mask_mov_ps(max, none, _mm512_setzero_ps());
  for (int r = 0; r < kRows; ++r)
    logits[r] = _mm512_maskz_mov_ps(visible[r], Exp(_mm512_sub_ps(logits[r], RowValue(shift, r))));
  __m512 sum = Fold(logits, SumOf{});
  if (d.has_sink()) sum = _mm512_add_ps(sum, Exp(_mm512_sub_ps(_mm512_set1_ps(sink), shift)));
  const __m512 safe_sum = _mm512_mask_mov_ps(sum, none, _mm512_set1_ps(1.0f));
  StoreRows(_mm512_maskz_div_ps(~none, _mm512_set1_ps(1.0f), safe_sum), inv_sum);
  StoreRows(_mm512_mask_mov_ps(_mm512_add_ps(max, Log(safe_sum)), none, max), lse);
}

// Queries [i, i + R): lse, and out = weights @ values / sum; the weights
// exp(logit - max) * keep go through scratch->a.
template <int R>
TVLAB_AVX512_INLINE void ForwardRows(const Head& hd, const float* q, const float* v, int64_t i, float* out,
                                     float* lse) {
  const FusedAttentionDesc& d = *hd.d;
  const int64_t hs = d.head_dim, hv = d.value_dim, lse_row = hd.lse0 + i;
  const float sink = d.has_sink() ? d.sink_logits[hd.h] : kNegInf;
  float* w = hd.scratch->a.data() + i * kLanes;
  __m512 x[R];
  Products<R>(q + hd.QueryOffset(i, hs), hd.qstep * hs, hs, hd.kt, x);
  __mmask16 visible[R];
  unsigned any = 0;
  for (int r = 0; r < R; ++r) {
    visible[r] = VisibleLanes(d, hd.unmasked, hd.b, i + r);
    any |= visible[r];
    x[r] = _mm512_mask_mul_ps(_mm512_set1_ps(kNegInf), visible[r], x[r], _mm512_set1_ps(d.scale));
  }
  float inv_sum[R];
  if constexpr (R == kRows) {
    EightRowWeights(d, sink, visible, x, inv_sum, lse + lse_row);
  } else {
    for (int r = 0; r < R; ++r) x[r] = RowWeights(d, sink, visible[r], x[r], &inv_sum[r], &lse[lse_row + r]);
  }
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(w + r * kLanes, _mm512_mul_ps(x[r], KeepRow(hd, i + r)));
  const KeySpan keys = SpanOf(any);
  WeightedRows<R>(w, v + hd.KeyOffset(hv), hd.kstep * hv, keys.first, keys.end, hv, inv_sum,
                  out + hd.QueryOffset(i, hv), hd.qstep * hv);
}

TVLAB_AVX512 void ForwardHead(const Head& hd, const float* q, const float* v, float* out, float* lse) {
  const int64_t t = hd.d->queries;
  int64_t i = 0;
  for (; i + kRows <= t; i += kRows) ForwardRows<kRows>(hd, q, v, i, out, lse);
  for (; i < t; ++i) ForwardRows<1>(hd, q, v, i, out, lse);
}

// What the backward reads and writes (whole tensors).
struct Gradients {
  const float *q, *k, *out, *lse, *dout;
  float *dq, *dk, *dv;
};

// Queries [i, i + R): the logits' gradients ds into scratch->a and the
// weights the forward used (weight * keep) into scratch->b, 0 for hidden
// keys, and dq rows = ds @ keys.
template <int R>
TVLAB_AVX512_INLINE void BackwardRows(const Head& hd, const Gradients& g, int64_t i) {
  const FusedAttentionDesc& d = *hd.d;
  const int64_t hs = d.head_dim, hv = d.value_dim, lse_row = hd.lse0 + i;
  float* ds = hd.scratch->a.data() + i * kLanes;
  float* kept_weights = hd.scratch->b.data() + i * kLanes;
  __m512 logits[R], dp[R];  // q . k_j; dout . v_j
  Products<R>(g.q + hd.QueryOffset(i, hs), hd.qstep * hs, hs, hd.kt, logits);
  Products<R>(g.dout + hd.QueryOffset(i, hv), hd.qstep * hv, hv, hd.vt, dp);
  float big_d[R];  // dout . out per row
  RowDots<R>(g.dout + hd.QueryOffset(i, hv), g.out + hd.QueryOffset(i, hv), hd.qstep * hv, hv, big_d);
  unsigned any = 0;
  for (int r = 0; r < R; ++r) {
    const __mmask16 visible = VisibleLanes(d, hd.unmasked, hd.b, i + r);
    any |= visible;
    const float row_lse = g.lse[lse_row + r];
    // Every weight is 0 in a row without a key (lse -inf, without a sink too).
    const __m512 shifted = _mm512_fmsub_ps(logits[r], _mm512_set1_ps(d.scale), _mm512_set1_ps(row_lse));
    const __m512 weight = row_lse == kNegInf ? _mm512_setzero_ps() : _mm512_maskz_mov_ps(visible, Exp(shifted));
    const __m512 kept = KeepRow(hd, i + r);
    const __m512 grad = _mm512_fmsub_ps(kept, dp[r], _mm512_set1_ps(big_d[r]));
    _mm512_storeu_ps(ds + r * kLanes, _mm512_mul_ps(_mm512_mul_ps(weight, grad), _mm512_set1_ps(d.scale)));
    _mm512_storeu_ps(kept_weights + r * kLanes, _mm512_mul_ps(weight, kept));
  }
  const KeySpan keys = SpanOf(any);
  WeightedRows<R>(ds, g.k + hd.KeyOffset(hs), hd.kstep * hs, keys.first, keys.end, hs, nullptr,
                  g.dq + hd.QueryOffset(i, hs), hd.qstep * hs);
}

// dq of the head's rows; dk_j += sum_i ds_ij q_i and dv_j += sum_i
// weight_ij keep_ij dout_i into its key/value head's (= for the group's
// first query head).
TVLAB_AVX512 void BackwardHead(const Head& hd, const Gradients& g, bool first_of_group) {
  const FusedAttentionDesc& d = *hd.d;
  const int64_t t = d.queries;
  int64_t i = 0;
  for (; i + kRows <= t; i += kRows) BackwardRows<kRows>(hd, g, i);
  for (; i < t; ++i) BackwardRows<1>(hd, g, i);
  const Scratch& s = *hd.scratch;
  const int64_t hs = d.head_dim, hv = d.value_dim;
  AddWeightedRowsToKeys(s.a.data(), g.q + hd.QueryOffset(0, hs), hd.qstep * hs, t, hs, d.keys, !first_of_group,
                        g.dk + hd.KeyOffset(hs), hd.kstep * hs);
  AddWeightedRowsToKeys(s.b.data(), g.dout + hd.QueryOffset(0, hv), hd.qstep * hv, t, hv, d.keys, !first_of_group,
                        g.dv + hd.KeyOffset(hv), hd.kstep * hv);
}

bool Parallel(const FusedAttentionDesc& d) {
  return d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
}

// Runs body(head, first_of_group) for every query head, grouped by
// key/value head bg = b * G + g in tasks of ShortAttentionGroupsPerTask (OpenMP; a
// key/value head's dk and dv are one thread's). `prepare(k0, kstep,
// scratch)` fills the scratch's transposed keys (and values) of a key/value
// head first (its keys at rows k0 + j * kstep).
template <typename Prepare, typename Body>
void ForEachHead(const FusedAttentionDesc& d, Prepare&& prepare, Body&& body) {
  const int64_t groups = d.batch * d.kv_heads, per_task = ShortAttentionGroupsPerTask(d), gs = d.group_size();
  const int64_t s = d.keys, t = d.queries;
  const bool unmasked = Unmasked(d.mask);
  ForEachIndex(Parallel(d), (groups + per_task - 1) / per_task, [&](int64_t task) {
    const int64_t first = task * per_task;
    Scratch& scratch = ThreadScratch();
    scratch.a.resize(static_cast<size_t>(t * kLanes));
    scratch.b.resize(static_cast<size_t>(t * kLanes));
    const int64_t end = std::min(groups, first + per_task);
    const float* keep = ShortAttentionKeepFactors(d, first * gs, (end - first) * gs, scratch.keep, scratch.words);
    for (int64_t bg = first; bg < end; ++bg) {
      const int64_t b = bg / d.kv_heads, g = bg % d.kv_heads, k0 = d.KeyRow(b, g, 0);
      prepare(k0, d.KeyRowStep(), scratch);
      for (int64_t h = g * gs; h < (g + 1) * gs; ++h) {
        const float* head_keep = keep == nullptr ? nullptr : keep + ((bg - first) * gs + h - g * gs) * t * s;
        body(Head{&d, b, h, (b * d.heads + h) * t, d.QueryRow(b, h, 0), d.QueryRowStep(), k0, d.KeyRowStep(),
                  scratch.kt.xt.data(), scratch.vt.xt.data(), head_keep, &scratch, unmasked},
             /*first_of_group=*/h == g * gs);
      }
    }
  });
}

}  // namespace
}  // namespace short_avx512

bool ShortAttentionAvx512Available() { return CpuHasAvx512f(); }

void ShortAttentionForwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k,
                                 const float* v, float* out, float* lse) {
  d.CheckConsistent();
  TVLAB_CHECK(ShortAttentionAvx512Available() && IsShortAttention(d)) << "ShortAttentionForwardAvx512";
  if (HeadsInLanesTakes(d)) return HeadsInLanesForward(d, q, k, v, out, lse);
  const int64_t hs = d.head_dim;
  short_avx512::ForEachHead(
      d,
      [&](int64_t k0, int64_t kstep, short_avx512::Scratch& s) { s.kt.Fill(k + k0 * hs, kstep * hs, d.keys, hs); },
      [&](const short_avx512::Head& hd, bool /*first_of_group*/) { short_avx512::ForwardHead(hd, q, v, out, lse); });
}

void ShortAttentionBackwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k,
                                  const float* v, const float* out, const float* lse,
                                  const float* dout, float* dq, float* dk, float* dv) {
  d.CheckConsistent();
  TVLAB_CHECK(ShortAttentionAvx512Available() && IsShortAttention(d)) << "ShortAttentionBackwardAvx512";
  if (HeadsInLanesTakes(d)) return HeadsInLanesBackward(d, q, k, v, out, lse, dout, dq, dk, dv);
  const int64_t hs = d.head_dim, hv = d.value_dim, s = d.keys;
  const short_avx512::Gradients g{q, k, out, lse, dout, dq, dk, dv};
  short_avx512::ForEachHead(
      d,
      [&](int64_t k0, int64_t kstep, short_avx512::Scratch& scratch) {
        scratch.kt.Fill(k + k0 * hs, kstep * hs, s, hs);
        scratch.vt.Fill(v + k0 * hv, kstep * hv, s, hv);
      },
      [&](const short_avx512::Head& hd, bool first_of_group) { short_avx512::BackwardHead(hd, g, first_of_group); });
}

}  // namespace onednn
}  // namespace tvlab
