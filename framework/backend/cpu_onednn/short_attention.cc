// The short fused attention kernel (short_attention.h).

// (the vector helpers' ABI, here and in the tiled rows' ExpMantissa
// instantiated for them: short_attention_lanes.h)
#pragma GCC diagnostic ignored "-Wpsabi"

#include "framework/backend/cpu_onednn/short_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/short_attention_avx512.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx2.h"
#include "framework/backend/cpu_onednn/short_attention_lanes.h"
#include "framework/core/check.h"
#include "framework/core/isa_clones.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace short_lanes {
namespace {

// The per-head loops are compiled for AVX-512, AVX2 and baseline x86-64
// (isa_clones.h: picked under the instruction-set cap); the helpers they
// call are inlined into each build.
constexpr int kRows = 4;  // query rows side by side: independent chains of adds
// Below this many multiply-adds the kernel runs on one thread (as the
// tiled kernel's).
constexpr int64_t kParallelMacs = int64_t{1} << 22;

// A key/value head's keys or values (S, width) transposed into lanes:
// (width, kLanes), lane j of row e = x[j][e], lanes S.. 0 (finite: a hidden
// key's lane is multiplied by a weight of 0).
class Transposed {
 public:
  const float* data() const { return xt_.data(); }
  void Fill(const float* x, int64_t s, int64_t width) {
    // Lanes from zero_from_ on are 0 in every row; only lanes < s are written.
    if (width != width_ || zero_from_ > s) {
      xt_.assign(static_cast<size_t>(width * kLanes), 0.0f);
      width_ = width;
    }
    zero_from_ = s;
    float* xt = xt_.data();
    for (int64_t j = 0; j < s; ++j)
      for (int64_t e = 0; e < width; ++e) xt[e * kLanes + j] = x[j * width + e];
  }

 private:
  std::vector<float> xt_;
  int64_t width_ = -1, zero_from_ = kLanes;
};

// Per query row of one head, from the first pass of a head (row by row:
// scores and softmax) to the second (key by key: products with the values,
// or the gradients' products): its visible keys, two rows of kLanes numbers
// (the forward's weights; the backward's logit gradients and weights) and a
// scale.
struct RowBuffers {
  std::vector<Span> keys;
  std::vector<float> a, b, scale;  // (T, kLanes), (T, kLanes), (T)
  void Reserve(int64_t t) {
    keys.resize(static_cast<size_t>(t));
    a.resize(static_cast<size_t>(t * kLanes));
    b.resize(static_cast<size_t>(t * kLanes));
    scale.resize(static_cast<size_t>(t));
  }
};

// One thread's buffers, grown as needed and kept across calls.
struct Scratch {
  Transposed kt, vt;            // the key/value head's keys and values
  RowBuffers rows;              // between a head's two passes
  std::vector<float> keep;      // dropout factors (ShortAttentionKeepFactors)
  std::vector<uint32_t> words;  // DropoutFactors' scratch
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// One query head of one batch row.
struct Head {
  int64_t b, h;
  int64_t row0;  // its query 0's row in q, out, lse, dq: (b * H + h) * T
};

Head HeadOf(const FusedAttentionDesc& d, int64_t b, int64_t h) {
  return {b, h, (b * d.heads + h) * d.queries};
}

// Query i's visible keys [first, end), clamped to [0, S).
TVLAB_SHORT_INLINE Span VisibleKeys(const FusedAttentionDesc& d, int64_t b, int64_t i) {
  const int64_t first = std::clamp<int64_t>(d.VisibleBegin(b, i), 0, d.keys);
  return {first, std::clamp<int64_t>(d.VisibleEnd(b, i), first, d.keys)};
}

// The keys any of queries [i, i + R) sees: [min first, max end).
template <int R>
TVLAB_SHORT_INLINE Span Union(const Span* keys) {
  Span all = keys[0];
  for (int r = 1; r < R; ++r) all = {std::min(all.first, keys[r].first), std::max(all.end, keys[r].end)};
  return all;
}

// Rows [i, i + R) of a (T, kLanes) buffer, as WeightedRows reads them.
TVLAB_SHORT_INLINE const float (*RowsAt(const std::vector<float>& x, int64_t i))[kLanes] {
  return reinterpret_cast<const float (*)[kLanes]>(x.data() + i * kLanes);
}

// Queries [i, i + R) of `head`, first pass: lse, and into `rows` the
// visible keys, weights exp(score - max) * keep (0 for hidden keys) and
// 1 / sum. kt (hs, kLanes) holds the head's keys; keep (T, S) its dropout
// factors or null. Each step runs for the R rows together.
template <int R>
TVLAB_SHORT_INLINE void ForwardWeights(const FusedAttentionDesc& d, const Head& head, int64_t i,
                                       const float* q, const float* kt, const float* keep,
                                       float* lse, RowBuffers& rows) {
  const float sink = d.has_sink() ? d.sink_logits[head.h] : kNegInf;
  Lanes s[R];  // scores, -inf for hidden keys
  RowProducts<R>(q + (head.row0 + i) * d.head_dim, d.head_dim, kt, d.scale, s);
  float max[R], sum[R];
  for (int r = 0; r < R; ++r) {
    rows.keys[i + r] = VisibleKeys(d, head.b, i + r);
    s[r] = HideOutside(s[r], rows.keys[i + r]);
    max[r] = std::max(sink, MaxLane(s[r]));
  }
  for (int r = 0; r < R; ++r) {
    const Lanes e = ExpLanes(s[r] - (max[r] == kNegInf ? 0.0f : max[r]));
    sum[r] = (d.has_sink() ? ExpLanes(Splat(sink - max[r]))[0] : 0.0f) + SumLanes(e);
    rows.scale[i + r] = max[r] == kNegInf ? 0.0f : 1.0f / sum[r];  // no key and no sink: out 0
    // (keep's lanes past S multiply e's zeros)
    Store(&rows.a[(i + r) * kLanes], keep == nullptr ? e : e * Load(keep + (i + r) * d.keys));
  }
  for (int r = 0; r < R; ++r)
    lse[head.row0 + i + r] = max[r] == kNegInf ? kNegInf : max[r] + std::log(sum[r]);
}

// out rows [i, i + R) of `head` = weights @ values / sum (vg: (S, hv)).
template <int R>
TVLAB_SHORT_INLINE void ForwardOut(const FusedAttentionDesc& d, const Head& head, int64_t i,
                                   const float* vg, const RowBuffers& rows, float* out) {
  const Span all = Union<R>(&rows.keys[i]);
  WeightedRows<R>(RowsAt(rows.a, i), vg, all.first, all.end, d.value_dim, &rows.scale[i],
                  out + (head.row0 + i) * d.value_dim);
}

TVLAB_CLONED_LOOP void ForwardHeadLoop(const FusedAttentionDesc& d, const Head& head, const float* q, const float* kt,
                                       const float* vg, const float* keep, float* out, float* lse, RowBuffers& rows) {
  const int64_t whole = d.queries / kRows * kRows;
  for (int64_t i = 0; i < whole; i += kRows) ForwardWeights<kRows>(d, head, i, q, kt, keep, lse, rows);
  for (int64_t i = whole; i < d.queries; ++i) ForwardWeights<1>(d, head, i, q, kt, keep, lse, rows);
  for (int64_t i = 0; i < whole; i += kRows) ForwardOut<kRows>(d, head, i, vg, rows, out);
  for (int64_t i = whole; i < d.queries; ++i) ForwardOut<1>(d, head, i, vg, rows, out);
}

void ForwardHead(const FusedAttentionDesc& d, const Head& head, const float* q, const float* kt, const float* vg,
                 const float* keep, float* out, float* lse, RowBuffers& rows) {
  RunIsaClone<ForwardHeadLoop>(d, head, q, kt, vg, keep, out, lse, rows);
}

// What the backward's rows read: the inputs, and the key/value head's keys
// and values as rows (kg, vg) and transposed into lanes (kt, vt).
struct BackwardInputs {
  const float *q, *out, *lse, *dout;
  const float *kg, *vg, *kt, *vt;
};

// Queries [i, i + R) of `head`, first pass: into `rows` the visible keys,
// the logits' gradients ds (a) and the weights the forward used (b), all 0
// for hidden keys. The weights are recomputed from lse; keep (T, S) is the
// head's dropout factors or null.
template <int R>
TVLAB_SHORT_INLINE void BackwardGradients(const FusedAttentionDesc& d, const Head& head, int64_t i,
                                          const BackwardInputs& in, const float* keep,
                                          RowBuffers& rows) {
  const int64_t hs = d.head_dim, hv = d.value_dim, row0 = head.row0 + i;
  Lanes logits[R], dp[R];  // scale * q . k_j; dout . v_j
  RowProducts<R>(in.q + row0 * hs, hs, in.kt, d.scale, logits);
  RowProducts<R>(in.dout + row0 * hv, hv, in.vt, 1.0f, dp);
  for (int r = 0; r < R; ++r) {
    const Span keys = rows.keys[i + r] = VisibleKeys(d, head.b, i + r);
    const float row_lse = in.lse[row0 + r];
    // Every weight is 0 in a row without a key (lse -inf: without a sink too).
    const Lanes weight =
        row_lse == kNegInf ? Splat(0.0f) : ExpLanes(HideOutside(logits[r], keys) - row_lse);
    const Lanes kept = keep == nullptr ? Splat(1.0f) : Load(keep + (i + r) * d.keys);
    const float big_d = Dot(in.dout + (row0 + r) * hv, in.out + (row0 + r) * hv, hv);  // D = dout . out
    Store(&rows.a[(i + r) * kLanes], weight * (kept * dp[r] - big_d) * d.scale);
    Store(&rows.b[(i + r) * kLanes], weight * kept);
    rows.scale[i + r] = 1.0f;
  }
}

// Second pass over queries [i, i + R): dq rows = sum_j ds_j k_j; dv_j +=
// weight_j dout and dk_j += ds_j q, row by row in order.
template <int R>
TVLAB_SHORT_INLINE void BackwardProducts(const FusedAttentionDesc& d, const Head& head, int64_t i,
                                         const BackwardInputs& in, const RowBuffers& rows,
                                         float* dq, float* dkg, float* dvg) {
  const int64_t hs = d.head_dim, hv = d.value_dim, row0 = head.row0 + i;
  const Span all = Union<R>(&rows.keys[i]);
  WeightedRows<R>(RowsAt(rows.a, i), in.kg, all.first, all.end, hs, &rows.scale[i], dq + row0 * hs);
  AddOuterProducts<R>(RowsAt(rows.b, i), in.dout + row0 * hv, all.first, all.end, hv, dvg);
  AddOuterProducts<R>(RowsAt(rows.a, i), in.q + row0 * hs, all.first, all.end, hs, dkg);
}

TVLAB_CLONED_LOOP void BackwardHeadLoop(const FusedAttentionDesc& d, const Head& head, const BackwardInputs& in,
                                        const float* keep, float* dq, float* dkg, float* dvg, RowBuffers& rows) {
  const int64_t whole = d.queries / kRows * kRows;
  for (int64_t i = 0; i < whole; i += kRows) BackwardGradients<kRows>(d, head, i, in, keep, rows);
  for (int64_t i = whole; i < d.queries; ++i) BackwardGradients<1>(d, head, i, in, keep, rows);
  for (int64_t i = 0; i < whole; i += kRows) BackwardProducts<kRows>(d, head, i, in, rows, dq, dkg, dvg);
  for (int64_t i = whole; i < d.queries; ++i) BackwardProducts<1>(d, head, i, in, rows, dq, dkg, dvg);
}

void BackwardHead(const FusedAttentionDesc& d, const Head& head, const BackwardInputs& in, const float* keep, float* dq,
                  float* dkg, float* dvg, RowBuffers& rows) {
  RunIsaClone<BackwardHeadLoop>(d, head, in, keep, dq, dkg, dvg, rows);
}

bool Parallel(const FusedAttentionDesc& d) {
  return d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
}

// Runs body(scratch, bg, group_keep) for every key/value head bg = b * G + g
// in tasks of ShortAttentionGroupsPerTask heads (OpenMP, one task a thread at a time, so a
// key/value head's dk and dv are one thread's); group_keep is the dropout
// factors (H / G, T, S) of its query heads, or null.
template <typename Body>
void ForEachGroup(const FusedAttentionDesc& d, Body&& body) {
  const int64_t groups = d.batch * d.kv_heads, per_task = ShortAttentionGroupsPerTask(d), gs = d.group_size();
#pragma omp parallel for schedule(static) if (Parallel(d))
  for (int64_t first = 0; first < groups; first += per_task) {
    Scratch& scratch = ThreadScratch();
    scratch.rows.Reserve(d.queries);
    const int64_t end = std::min(groups, first + per_task);
    const float* keep = ShortAttentionKeepFactors(d, first * gs, (end - first) * gs, scratch.keep, scratch.words);
    for (int64_t bg = first; bg < end; ++bg)
      body(scratch, bg, keep == nullptr ? nullptr : keep + (bg - first) * gs * d.queries * d.keys);
  }
}

// Query head h's dropout factors within its group's (null without).
const float* HeadKeep(const FusedAttentionDesc& d, const float* group_keep, int64_t h) {
  return group_keep == nullptr ? nullptr : group_keep + h % d.group_size() * d.queries * d.keys;
}

void Forward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
             float* out, float* lse) {
  ForEachGroup(d, [&](Scratch& scratch, int64_t bg, const float* group_keep) {
    scratch.kt.Fill(k + bg * d.keys * d.head_dim, d.keys, d.head_dim);
    const float* vg = v + bg * d.keys * d.value_dim;
    const int64_t b = bg / d.kv_heads, g = bg % d.kv_heads;
    for (int64_t h = g * d.group_size(); h < (g + 1) * d.group_size(); ++h)
      ForwardHead(d, HeadOf(d, b, h), q, scratch.kt.data(), vg, HeadKeep(d, group_keep, h), out,
                  lse, scratch.rows);
  });
}

void Backward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
              const float* out, const float* lse, const float* dout, float* dq, float* dk,
              float* dv) {
  const int64_t hs = d.head_dim, hv = d.value_dim;
  ForEachGroup(d, [&](Scratch& scratch, int64_t bg, const float* group_keep) {
    const float* kg = k + bg * d.keys * hs;  // (S, hs)
    const float* vg = v + bg * d.keys * hv;  // (S, hv)
    float* dkg = dk + bg * d.keys * hs;
    float* dvg = dv + bg * d.keys * hv;
    std::fill(dkg, dkg + d.keys * hs, 0.0f);
    std::fill(dvg, dvg + d.keys * hv, 0.0f);
    scratch.kt.Fill(kg, d.keys, hs);
    scratch.vt.Fill(vg, d.keys, hv);
    const BackwardInputs in{q, out, lse, dout, kg, vg, scratch.kt.data(), scratch.vt.data()};
    const int64_t b = bg / d.kv_heads, g = bg % d.kv_heads;
    for (int64_t h = g * d.group_size(); h < (g + 1) * d.group_size(); ++h)
      BackwardHead(d, HeadOf(d, b, h), in, HeadKeep(d, group_keep, h), dq, dkg, dvg, scratch.rows);
  });
}

}  // namespace
}  // namespace short_lanes

// The key/value groups a task takes: enough that their query heads'
// dropout factors are drawn in one call of about 4096 (a call per head, 64
// factors at the sort model's shape, made the portable forward 20% slower).
int64_t ShortAttentionGroupsPerTask(const FusedAttentionDesc& d) {
  constexpr int64_t kDrawElements = 4096;
  return std::max<int64_t>(1, kDrawElements / std::max<int64_t>(1, d.group_size() * d.queries * d.keys));
}

const float* ShortAttentionKeepFactors(const FusedAttentionDesc& d, int64_t first, int64_t count,
                                       std::vector<float>& keep, std::vector<uint32_t>& words) {
  if (d.dropout <= 0.0f) return nullptr;
  const int64_t n = count * d.queries * d.keys;
  keep.resize(static_cast<size_t>(n + kShortAttentionKeys));
  std::fill(keep.begin() + n, keep.end(), 0.0f);
  DropoutFactors(*d.dropout_stream, d.dropout, static_cast<uint64_t>(first * d.queries * d.keys), n, keep.data(),
                 words);
  return keep.data();
}

bool IsShortAttention(const FusedAttentionDesc& d) {
  return d.keys >= 1 && d.keys <= kShortAttentionKeys && d.alibi_slopes.empty() &&
         !d.has_bucket_bias() && d.logit_softcap == 0.0f;
}

void ShortAttentionForward(const FusedAttentionDesc& d, const float* q, const float* k,
                           const float* v, float* out, float* lse) {
  if (onednn::ShortAttentionAvx512Available()) return onednn::ShortAttentionForwardAvx512(d, q, k, v, out, lse);
  if (onednn::HeadsInLanesAvx2Takes(d)) return onednn::HeadsInLanesForwardAvx2(d, q, k, v, out, lse);
  PortableShortAttentionForward(d, q, k, v, out, lse);
}

void PortableShortAttentionForward(const FusedAttentionDesc& d, const float* q, const float* k,
                                   const float* v, float* out, float* lse) {
  d.CheckConsistent();
  TVLAB_CHECK(IsShortAttention(d)) << "ShortAttentionForward on " << d.keys << " keys";
  TVLAB_CHECK(!d.token_major) << "the portable short kernel takes head-major q, k, v only";
  short_lanes::Forward(d, q, k, v, out, lse);
}

void ShortAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                            const float* v, const float* out, const float* lse,
                            const float* dout, float* dq, float* dk, float* dv) {
  if (onednn::ShortAttentionAvx512Available())
    return onednn::ShortAttentionBackwardAvx512(d, q, k, v, out, lse, dout, dq, dk, dv);
  if (onednn::HeadsInLanesAvx2Takes(d)) return onednn::HeadsInLanesBackwardAvx2(d, q, k, v, out, lse, dout, dq, dk, dv);
  PortableShortAttentionBackward(d, q, k, v, out, lse, dout, dq, dk, dv);
}

void PortableShortAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                                    const float* v, const float* out, const float* lse,
                                    const float* dout, float* dq, float* dk, float* dv) {
  d.CheckConsistent();
  TVLAB_CHECK(IsShortAttention(d)) << "ShortAttentionBackward on " << d.keys << " keys";
  TVLAB_CHECK(!d.token_major) << "the portable short kernel takes head-major q, k, v only";
  short_lanes::Backward(d, q, k, v, out, lse, dout, dq, dk, dv);
}

}  // namespace tvlab
