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

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx512_rows.h"
#include "framework/core/check.h"

namespace tvlab {
namespace onednn {
namespace heads_avx512 {
namespace {

using short_avx512::Exp;
using short_avx512::kNegInf;
using short_avx512::Log;

constexpr int64_t kMaxQueries = 64;   // HeadsInLanesTakes' bounds
constexpr int64_t kMaxHeadSize = 64;
constexpr int64_t kDrawElements = 4096;               // dropout factors drawn a task, about
constexpr int64_t kParallelMacs = int64_t{1} << 22;   // as the eight-rows layout's

// Vectors of 16 floats, 64-byte aligned, grown as needed (a pointer from
// Get is good until the next Get).
class VectorBuffer {
 public:
  float* Get(int64_t vectors) {
    raw_.resize(static_cast<size_t>(vectors * kLanes));
    return raw_.data();
  }

 private:
  CacheLineVector<float> raw_;
};

// The dropout factors of a task's query heads [first, end) in lanes, T * S
// vectors a block of 16, as the forward drew them. The backward of the same
// call asks for the same stream, probability and heads, so the same
// factors, and finds them here instead of drawing and transposing them
// again (the sort shape's backward, a new stream each call: 105-110 -> 98-100
// us in a slow phase).
struct KeptTask {
  std::optional<RngStream> stream;
  float p = 0.0f;
  int64_t first = 0, end = 0, queries = 0, keys = 0;
  VectorBuffer lanes;
  const float* factors = nullptr;

  bool Holds(const FusedAttentionDesc& d, int64_t f, int64_t e) const {
    return stream.has_value() && *stream == *d.dropout_stream && p == d.dropout && first == f && end == e &&
           queries == d.queries && keys == d.keys;
  }
};

// A thread keeps this many tasks' factors (the sort step's forward makes 8:
// 2 layers x 4 tasks), the oldest replaced first; a miss draws.
constexpr int kKeptTasks = 16;

// One thread's buffers, kept across calls.
struct Scratch {
  VectorBuffer q, k, v, dout, lse, inv_sum, kept, grads;
  std::vector<float> keep_rows;  // ShortAttentionKeepFactors' (heads, T, S)
  std::vector<uint32_t> words;   // DropoutFactors' scratch
  KeptTask kept_tasks[kKeptTasks];
  int next_kept = 0;
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Query heads n0 .. n0 + lanes - 1 (n = b * H + h), lane l for head n0 + l.
struct Block {
  int lanes = 0;
  int64_t head[kLanes];         // n
  int64_t query_row[kLanes];    // its query 0's row of q, out, dq, dout
  int64_t key_row[kLanes];      // its key/value head's key 0's row of k, v, dk, dv
  bool later_in_group[kLanes];  // not its key/value head's first query head
};

Block BlockAt(const FusedAttentionDesc& d, int64_t n0) {
  Block blk;
  blk.lanes = static_cast<int>(std::min<int64_t>(kLanes, d.batch * d.heads - n0));
  const int64_t gs = d.group_size();  // a power of two (HeadsInLanesTakes)
  int64_t b = n0 / d.heads, h = n0 % d.heads;
  for (int l = 0; l < kLanes; ++l) {  // lanes past the last repeat its rows, never read or written
    blk.head[l] = b * d.heads + h;
    blk.query_row[l] = d.QueryRow(b, h, 0);
    blk.key_row[l] = d.KeyRow(b, h / gs, 0);
    blk.later_in_group[l] = (h & (gs - 1)) != 0;
    if (l + 1 < blk.lanes && ++h == d.heads) h = 0, ++b;
  }
  return blk;
}

// Keys [first, end) are visible from query i (from every batch row alike:
// HeadsInLanesTakes).
struct KeySpan {
  int64_t first = 0, end = 0;
};

std::vector<KeySpan> Spans(const FusedAttentionDesc& d) {
  std::vector<KeySpan> spans(static_cast<size_t>(d.queries));
  for (int64_t i = 0; i < d.queries; ++i) {
    const int64_t first = std::clamp<int64_t>(d.VisibleBegin(0, i), 0, d.keys);
    spans[i] = {first, std::clamp<int64_t>(d.VisibleEnd(0, i), first, d.keys)};
  }
  return spans;
}

// acc[j] = row i of xt . row j of yt for j < kS (xt's rows and yt's of width).
template <int kS>
TVLAB_HEADS_INLINE void Dots(const float* xt, int64_t i, const float* yt, int64_t width, __m512* acc) {
  for (int j = 0; j < kS; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t e = 0; e < width; ++e) {
    const __m512 x = _mm512_load_ps(xt + (i * width + e) * kLanes);
    for (int j = 0; j < kS; ++j) acc[j] = _mm512_fmadd_ps(x, _mm512_load_ps(yt + (j * width + e) * kLanes), acc[j]);
  }
}

// A block's tensors in lanes (vectors): q (T, hs), k (kS, hs), the
// backward's v (kS, hv) and dout (T, hv), the dropout factors (T, S; a
// KeptTask's) or null, lse (1, T), the forward's 1 / sum (1, T); the
// weights p_ij keep_ij (T, kS) and the backward's ds (T, kS). Keys S ..
// kS - 1 of k and v are 0.
struct Buffers {
  float *q, *k, *v, *dout;
  const float* keep;
  float *lse, *inv_sum, *kept, *grads;
};

Buffers BuffersFor(const FusedAttentionDesc& d, int ks, bool backward, Scratch& s) {
  const int64_t t = d.queries, hs = d.head_dim, hv = d.value_dim;
  Buffers b{s.q.Get(t * hs), s.k.Get(ks * hs), backward ? s.v.Get(ks * hv) : nullptr,
            backward ? s.dout.Get(t * hv) : nullptr, /*keep=*/nullptr,
            s.lse.Get(t), s.inv_sum.Get(t), s.kept.Get(t * ks), s.grads.Get(t * ks)};
  std::memset(b.k + d.keys * hs * kLanes, 0, sizeof(float) * (ks - d.keys) * hs * kLanes);
  if (backward) std::memset(b.v + d.keys * hv * kLanes, 0, sizeof(float) * (ks - d.keys) * hv * kLanes);
  return b;
}

// The block's q and k into lanes.
TVLAB_HEADS void Gather(const FusedAttentionDesc& d, const Block& blk, const float* q, const float* k,
                        const Buffers& b) {
  IntoLanes(q, blk.query_row, blk.lanes, d.QueryRowStep(), d.queries, d.head_dim, b.q);
  IntoLanes(k, blk.key_row, blk.lanes, d.KeyRowStep(), d.keys, d.head_dim, b.k);
}

// The dropout factors of query heads [first, end) in lanes (KeptTask), from
// this thread's kept tasks or drawn (ShortAttentionKeepFactors) and kept;
// null without dropout.
TVLAB_HEADS const float* TaskKeep(const FusedAttentionDesc& d, int64_t first, int64_t end, Scratch& s) {
  if (d.dropout <= 0.0f) return nullptr;
  for (const KeptTask& kept : s.kept_tasks)
    if (kept.Holds(d, first, end)) return kept.factors;
  KeptTask& kept = s.kept_tasks[s.next_kept];
  s.next_kept = (s.next_kept + 1) % kKeptTasks;
  const int64_t ts = d.queries * d.keys;
  const float* rows = ShortAttentionKeepFactors(d, first, end - first, s.keep_rows, s.words);  // (heads, T, S)
  float* lanes = kept.lanes.Get((end - first + kLanes - 1) / kLanes * ts);
  int64_t lane_rows[kLanes];  // lane l's factors: row l of a block's (16, T * S)
  for (int l = 0; l < kLanes; ++l) lane_rows[l] = l;
  for (int64_t n0 = first; n0 < end; n0 += kLanes)
    IntoLanes(rows + (n0 - first) * ts, lane_rows, static_cast<int>(std::min<int64_t>(kLanes, end - n0)), 0, 1, ts,
              lanes + (n0 - first) * ts);
  kept.stream = *d.dropout_stream, kept.p = d.dropout, kept.first = first, kept.end = end;
  kept.queries = d.queries, kept.keys = d.keys, kept.factors = lanes;
  return lanes;
}

// The sink logit of each lane's head, or -inf without sinks.
TVLAB_HEADS_INLINE __m512 SinkLanes(const FusedAttentionDesc& d, const Block& blk) {
  if (!d.has_sink()) return _mm512_set1_ps(kNegInf);
  alignas(64) float sinks[kLanes];
  for (int l = 0; l < kLanes; ++l) sinks[l] = d.sink_logits[blk.head[l] % d.heads];
  return _mm512_load_ps(sinks);
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
TVLAB_HEADS void ForwardRows(const FusedAttentionDesc& d, const KeySpan* spans, const Block& blk, const Buffers& b) {
  const __m512 sink = SinkLanes(d, blk);
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

bool Parallel(const FusedAttentionDesc& d) {
  return d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
}

// Runs body(block, buffers) for every block of 16 query heads, in tasks of
// a few blocks (OpenMP; a key/value head's query heads are in one block, so
// its dk and dv are one thread's), with buffers sized for kS keys and
// buffers.keep at the block's dropout factors in lanes (null without).
template <int kS, typename Body>
void ForEachBlock(const FusedAttentionDesc& d, bool backward, Body&& body) {
  const int64_t heads = d.batch * d.heads, blocks = (heads + kLanes - 1) / kLanes, ts = d.queries * d.keys;
  const int64_t per_task = std::max<int64_t>(1, kDrawElements / (kLanes * ts));
  ForEachIndex(Parallel(d), (blocks + per_task - 1) / per_task, [&](int64_t task) {
    Scratch& scratch = ThreadScratch();
    const int64_t first = task * per_task * kLanes, end = std::min(heads, first + per_task * kLanes);
    const float* keep = TaskKeep(d, first, end, scratch);
    Buffers buffers = BuffersFor(d, kS, backward, scratch);
    for (int64_t n0 = first; n0 < end; n0 += kLanes) {
      buffers.keep = keep == nullptr ? nullptr : keep + (n0 - first) * ts;  // (T, S) vectors
      body(BlockAt(d, n0), buffers);
    }
  });
}

template <int kS>
TVLAB_HEADS void Forward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                         float* lse) {
  const std::vector<KeySpan> spans = Spans(d);
  const int64_t hv = d.value_dim, qstep = d.QueryRowStep() * hv, kstep = d.KeyRowStep() * hv;
  ForEachBlock<kS>(d, /*backward=*/false, [&](const Block& blk, const Buffers& b) {
    Gather(d, blk, q, k, b);
    ForwardRows<kS>(d, spans.data(), blk, b);
    for (int l = 0; l < blk.lanes; ++l)
      MixRows<kS>(b.kept, l, v + blk.key_row[l] * hv, kstep, d.keys, d.queries, hv, b.inv_sum,
                  out + blk.query_row[l] * hv, qstep);
    FromLanes(b.lse, 1, d.queries, blk.head, blk.lanes, 0, lse);  // lse row n: (b * H + h) * T
  });
}

struct Gradients {
  const float *q, *k, *v, *lse, *dout;  // not out: BackwardRows
  float *dq, *dk, *dv;
};

// dq, dk and dv of one head (lane l) from ds and the kept weights in lanes.
template <int kS>
TVLAB_HEADS void HeadGradients(const FusedAttentionDesc& d, const Gradients& g, const Block& blk, const Buffers& b,
                               int l) {
  const int64_t t = d.queries, s = d.keys, hs = d.head_dim, hv = d.value_dim;
  const int64_t q0 = blk.query_row[l], k0 = blk.key_row[l], qstep = d.QueryRowStep(), kstep = d.KeyRowStep();
  MixRows<kS>(b.grads, l, g.k + k0 * hs, kstep * hs, s, t, hs, nullptr, g.dq + q0 * hs, qstep * hs);
  SumRows<kS>(b.grads, l, g.q + q0 * hs, qstep * hs, t, s, hs, blk.later_in_group[l], g.dk + k0 * hs, kstep * hs);
  SumRows<kS>(b.kept, l, g.dout + q0 * hv, qstep * hv, t, s, hv, blk.later_in_group[l], g.dv + k0 * hv,
              kstep * hv);
}

template <int kS>
TVLAB_HEADS void Backward(const FusedAttentionDesc& d, const Gradients& g) {
  const std::vector<KeySpan> spans = Spans(d);
  ForEachBlock<kS>(d, /*backward=*/true, [&](const Block& blk, const Buffers& b) {
    Gather(d, blk, g.q, g.k, b);
    IntoLanes(g.v, blk.key_row, blk.lanes, d.KeyRowStep(), d.keys, d.value_dim, b.v);
    IntoLanes(g.dout, blk.query_row, blk.lanes, d.QueryRowStep(), d.queries, d.value_dim, b.dout);
    IntoLanes(g.lse, blk.head, blk.lanes, 0, 1, d.queries, b.lse);
    BackwardRows<kS>(d, spans.data(), b);
    for (int l = 0; l < blk.lanes; ++l) HeadGradients<kS>(d, g, blk, b, l);
  });
}

}  // namespace
}  // namespace heads_avx512

bool HeadsInLanesTakes(const FusedAttentionDesc& d) {
  namespace ha = heads_avx512;
  return d.batch * d.heads >= ha::kLanes && ha::kLanes % d.group_size() == 0 && d.queries <= ha::kMaxQueries &&
         d.head_dim <= ha::kMaxHeadSize && d.value_dim <= ha::kMaxHeadSize && d.mask.key_lengths.empty() &&
         !d.mask.has_documents();
}

void HeadsInLanesForward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                         float* lse) {
  TVLAB_CHECK(HeadsInLanesTakes(d) && IsShortAttention(d)) << "HeadsInLanesForward";
  if (d.keys <= 8) return heads_avx512::Forward<8>(d, q, k, v, out, lse);
  heads_avx512::Forward<16>(d, q, k, v, out, lse);
}

void HeadsInLanesBackward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                          const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  TVLAB_CHECK(HeadsInLanesTakes(d) && IsShortAttention(d)) << "HeadsInLanesBackward";
  const heads_avx512::Gradients g{q, k, v, lse, dout, dq, dk, dv};
  (void)out;  // dout . out from the weights instead (BackwardRows)
  if (d.keys <= 8) return heads_avx512::Backward<8>(d, g);
  heads_avx512::Backward<16>(d, g);
}

}  // namespace onednn
}  // namespace tvlab
