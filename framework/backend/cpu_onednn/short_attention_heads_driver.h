#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_DRIVER_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_DRIVER_H_

// The heads-in-lanes short attention kernel's plan, the same for each
// instruction set's build (short_attention_heads_avx512.h): blocks of as
// many query heads as a vector has lanes, tasks of a few blocks over
// OpenMP threads, each thread's buffers and kept dropout factors, and the
// order of a block's steps. The vector steps are the build's `Isa`: a
// struct of constexpr pointers to functions compiled for its instruction
// set (each call through one is a direct call):
//
//   kLanes: query heads a block, one a lane.
//   IntoLanes(x, row, lanes, step, rows, width, xt): xt (rows, width) in
//     lanes, lane l of vector r * width + e being x[(row[l] + r * step) *
//     width + e] (0 past `lanes`); FromLanes(xt, rows, width, row, lanes,
//     step, x) back.
//   ForwardRows<kS>(d, spans, sinks, buffers): lse, 1 / sum and the kept
//     weights in lanes (sinks: each lane's sink logit, or -inf).
//   BackwardRows<kS>(d, spans, buffers): ds and the kept weights in lanes.
//   MixRows<kS>(w, l, y, ldy, s, t, n, scale, out, ldo) and SumRows<kS>(w,
//     l, x, ldx, t, s, n, add, out, ldo): one head's (lane l's) products of
//     the weights (or ds) in lanes with its rows: out or dq, dk or dv.
//
// Every build runs the same IEEE operations in each lane in the same order,
// so every build gives the same bits (short_attention_heads_test).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/fused_attention.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace onednn {
namespace heads_in_lanes {

constexpr int64_t kMaxQueries = 64;  // Takes' bounds
constexpr int64_t kMaxHeadSize = 64;
constexpr int64_t kDrawElements = 4096;              // dropout factors drawn a task, about
constexpr int64_t kParallelMacs = int64_t{1} << 22;  // as the eight-rows layout's

// Whether a build of kLanes lanes takes `d`: at least kLanes query heads in
// all (B * H), a key/value head's query heads in one block (kLanes %
// (H / G) == 0), at most 64 queries and head sizes at most 64 (a block's
// rows stay in L1), and a mask without key lengths or documents (the same
// keys visible from every batch row).
template <int kLanes>
bool Takes(const FusedAttentionDesc& d) {
  return d.batch * d.heads >= kLanes && kLanes % d.group_size() == 0 && d.queries <= kMaxQueries &&
         d.head_dim <= kMaxHeadSize && d.value_dim <= kMaxHeadSize && d.mask.key_lengths.empty() &&
         !d.mask.has_documents();
}

// Vectors of kLanes floats on cache lines, grown as needed (a pointer from
// Get is good until the next Get).
template <int kLanes>
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
// vectors a block, as the forward drew them. The backward of the same call
// asks for the same stream, probability and heads, so the same factors,
// and finds them here instead of drawing and transposing them again (the
// sort shape's backward, a new stream each call: 105-110 -> 98-100 us in a
// slow phase).
template <int kLanes>
struct KeptTask {
  std::optional<RngStream> stream;
  float p = 0.0f;
  int64_t first = 0, end = 0, queries = 0, keys = 0;
  VectorBuffer<kLanes> lanes;
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
template <int kLanes>
struct Scratch {
  VectorBuffer<kLanes> q, k, v, dout, lse, inv_sum, kept, grads;
  std::vector<float> keep_rows;  // ShortAttentionKeepFactors' (heads, T, S)
  std::vector<uint32_t> words;   // DropoutFactors' scratch
  KeptTask<kLanes> kept_tasks[kKeptTasks];
  int next_kept = 0;
};

template <int kLanes>
Scratch<kLanes>& ThreadScratch() {
  thread_local Scratch<kLanes> scratch;
  return scratch;
}

// Query heads n0 .. n0 + lanes - 1 (n = b * H + h), lane l for head n0 + l.
template <int kLanes>
struct Block {
  int lanes = 0;
  int64_t head[kLanes];         // n
  int64_t query_row[kLanes];    // its query 0's row of q, out, dq, dout
  int64_t key_row[kLanes];      // its key/value head's key 0's row of k, v, dk, dv
  bool later_in_group[kLanes];  // not its key/value head's first query head
};

template <int kLanes>
Block<kLanes> BlockAt(const FusedAttentionDesc& d, int64_t n0) {
  Block<kLanes> blk;
  blk.lanes = static_cast<int>(std::min<int64_t>(kLanes, d.batch * d.heads - n0));
  const int64_t gs = d.group_size();  // a power of two (Takes)
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
// Takes).
struct KeySpan {
  int64_t first = 0, end = 0;
};

inline std::vector<KeySpan> Spans(const FusedAttentionDesc& d) {
  std::vector<KeySpan> spans(static_cast<size_t>(d.queries));
  for (int64_t i = 0; i < d.queries; ++i) {
    const int64_t first = std::clamp<int64_t>(d.VisibleBegin(0, i), 0, d.keys);
    spans[i] = {first, std::clamp<int64_t>(d.VisibleEnd(0, i), first, d.keys)};
  }
  return spans;
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

template <int kLanes>
Buffers BuffersFor(const FusedAttentionDesc& d, int ks, bool backward, Scratch<kLanes>& s) {
  const int64_t t = d.queries, hs = d.head_dim, hv = d.value_dim;
  Buffers b{s.q.Get(t * hs),
            s.k.Get(ks * hs),
            backward ? s.v.Get(ks * hv) : nullptr,
            backward ? s.dout.Get(t * hv) : nullptr,
            /*keep=*/nullptr,
            s.lse.Get(t),
            s.inv_sum.Get(t),
            s.kept.Get(t * ks),
            s.grads.Get(t * ks)};
  std::memset(b.k + d.keys * hs * kLanes, 0, sizeof(float) * (ks - d.keys) * hs * kLanes);
  if (backward) std::memset(b.v + d.keys * hv * kLanes, 0, sizeof(float) * (ks - d.keys) * hv * kLanes);
  return b;
}

// The dropout factors of query heads [first, end) in lanes (KeptTask), from
// this thread's kept tasks or drawn (ShortAttentionKeepFactors) and kept;
// null without dropout.
template <class Isa>
const float* TaskKeep(const FusedAttentionDesc& d, int64_t first, int64_t end, Scratch<Isa::kLanes>& s) {
  constexpr int kLanes = Isa::kLanes;
  if (d.dropout <= 0.0f) return nullptr;
  for (const KeptTask<kLanes>& kept : s.kept_tasks)
    if (kept.Holds(d, first, end)) return kept.factors;
  KeptTask<kLanes>& kept = s.kept_tasks[s.next_kept];
  s.next_kept = (s.next_kept + 1) % kKeptTasks;
  const int64_t ts = d.queries * d.keys;
  const float* rows = ShortAttentionKeepFactors(d, first, end - first, s.keep_rows, s.words);  // (heads, T, S)
  float* lanes = kept.lanes.Get((end - first + kLanes - 1) / kLanes * ts);
  int64_t lane_rows[kLanes];  // lane l's factors: row l of a block's (kLanes, T * S)
  for (int l = 0; l < kLanes; ++l) lane_rows[l] = l;
  for (int64_t n0 = first; n0 < end; n0 += kLanes)
    Isa::IntoLanes(rows + (n0 - first) * ts, lane_rows, static_cast<int>(std::min<int64_t>(kLanes, end - n0)), 0, 1, ts,
                   lanes + (n0 - first) * ts);
  kept.stream = *d.dropout_stream, kept.p = d.dropout, kept.first = first, kept.end = end;
  kept.queries = d.queries, kept.keys = d.keys, kept.factors = lanes;
  return lanes;
}

inline bool Parallel(const FusedAttentionDesc& d) {
  return d.batch * d.heads * d.queries * d.keys * (d.head_dim + d.value_dim) >= kParallelMacs;
}

// Runs body(block, buffers) for every block of kLanes query heads, in tasks
// of a few blocks (OpenMP; a key/value head's query heads are in one block,
// so its dk and dv are one thread's), with buffers sized for kS keys and
// buffers.keep at the block's dropout factors in lanes (null without).
template <class Isa, int kS, typename Body>
void ForEachBlock(const FusedAttentionDesc& d, bool backward, Body&& body) {
  constexpr int kLanes = Isa::kLanes;
  const int64_t heads = d.batch * d.heads, blocks = (heads + kLanes - 1) / kLanes, ts = d.queries * d.keys;
  const int64_t per_task = std::max<int64_t>(1, kDrawElements / (kLanes * ts));
  ForEachIndex(Parallel(d), (blocks + per_task - 1) / per_task, [&](int64_t task) {
    Scratch<kLanes>& scratch = ThreadScratch<kLanes>();
    const int64_t first = task * per_task * kLanes, end = std::min(heads, first + per_task * kLanes);
    const float* keep = TaskKeep<Isa>(d, first, end, scratch);
    Buffers buffers = BuffersFor<kLanes>(d, kS, backward, scratch);
    for (int64_t n0 = first; n0 < end; n0 += kLanes) {
      buffers.keep = keep == nullptr ? nullptr : keep + (n0 - first) * ts;  // (T, S) vectors
      body(BlockAt<kLanes>(d, n0), buffers);
    }
  });
}

// The block's q and k into lanes.
template <class Isa>
void Gather(const FusedAttentionDesc& d, const Block<Isa::kLanes>& blk, const float* q, const float* k,
            const Buffers& b) {
  Isa::IntoLanes(q, blk.query_row, blk.lanes, d.QueryRowStep(), d.queries, d.head_dim, b.q);
  Isa::IntoLanes(k, blk.key_row, blk.lanes, d.KeyRowStep(), d.keys, d.head_dim, b.k);
}

// out's rows of every head of the block from the kept weights and v's rows.
template <class Isa, int kS>
void WeightedValues(const FusedAttentionDesc& d, const Block<Isa::kLanes>& blk, const Buffers& b, const float* v,
                    float* out) {
  const int64_t hv = d.value_dim, qstep = d.QueryRowStep() * hv, kstep = d.KeyRowStep() * hv;
  for (int l = 0; l < blk.lanes; ++l)
    Isa::template MixRows<kS>(b.kept, l, v + blk.key_row[l] * hv, kstep, d.keys, d.queries, hv, b.inv_sum,
                              out + blk.query_row[l] * hv, qstep);
}

template <class Isa, int kS>
void Forward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out, float* lse) {
  constexpr int kLanes = Isa::kLanes;
  const std::vector<KeySpan> spans = Spans(d);
  ForEachBlock<Isa, kS>(d, /*backward=*/false, [&](const Block<kLanes>& blk, const Buffers& b) {
    alignas(64) float sinks[kLanes];  // each lane's head's sink logit, or -inf without sinks
    for (int l = 0; l < kLanes; ++l)
      sinks[l] = d.has_sink() ? d.sink_logits[blk.head[l] % d.heads] : -std::numeric_limits<float>::infinity();
    Gather<Isa>(d, blk, q, k, b);
    Isa::template ForwardRows<kS>(d, spans.data(), sinks, b);
    WeightedValues<Isa, kS>(d, blk, b, v, out);
    Isa::FromLanes(b.lse, 1, d.queries, blk.head, blk.lanes, 0, lse);  // lse row n: (b * H + h) * T
  });
}

struct Gradients {
  const float *q, *k, *v, *lse, *dout;  // not out: BackwardRows
  float *dq, *dk, *dv;
};

// dq, dk and dv of every head of the block from ds and the kept weights in
// lanes.
template <class Isa, int kS>
void HeadGradients(const FusedAttentionDesc& d, const Gradients& g, const Block<Isa::kLanes>& blk, const Buffers& b) {
  const int64_t t = d.queries, s = d.keys, hs = d.head_dim, hv = d.value_dim;
  const int64_t qstep = d.QueryRowStep(), kstep = d.KeyRowStep();
  for (int l = 0; l < blk.lanes; ++l) {
    const int64_t q0 = blk.query_row[l], k0 = blk.key_row[l];
    const bool later = blk.later_in_group[l];
    Isa::template MixRows<kS>(b.grads, l, g.k + k0 * hs, kstep * hs, s, t, hs, nullptr, g.dq + q0 * hs, qstep * hs);
    Isa::template SumRows<kS>(b.grads, l, g.q + q0 * hs, qstep * hs, t, s, hs, later, g.dk + k0 * hs, kstep * hs);
    Isa::template SumRows<kS>(b.kept, l, g.dout + q0 * hv, qstep * hv, t, s, hv, later, g.dv + k0 * hv, kstep * hv);
  }
}

template <class Isa, int kS>
void Backward(const FusedAttentionDesc& d, const Gradients& g) {
  constexpr int kLanes = Isa::kLanes;
  const std::vector<KeySpan> spans = Spans(d);
  ForEachBlock<Isa, kS>(d, /*backward=*/true, [&](const Block<kLanes>& blk, const Buffers& b) {
    Gather<Isa>(d, blk, g.q, g.k, b);
    Isa::IntoLanes(g.v, blk.key_row, blk.lanes, d.KeyRowStep(), d.keys, d.value_dim, b.v);
    Isa::IntoLanes(g.dout, blk.query_row, blk.lanes, d.QueryRowStep(), d.queries, d.value_dim, b.dout);
    Isa::IntoLanes(g.lse, blk.head, blk.lanes, 0, 1, d.queries, b.lse);
    Isa::template BackwardRows<kS>(d, spans.data(), b);
    HeadGradients<Isa, kS>(d, g, blk, b);
  });
}

// Forward and Backward with kS 8 (at most 8 keys) or 16.
template <class Isa>
void ForwardAnyKeys(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                    float* lse) {
  if (d.keys <= 8) return Forward<Isa, 8>(d, q, k, v, out, lse);
  Forward<Isa, 16>(d, q, k, v, out, lse);
}
template <class Isa>
void BackwardAnyKeys(const FusedAttentionDesc& d, const Gradients& g) {
  if (d.keys <= 8) return Backward<Isa, 8>(d, g);
  Backward<Isa, 16>(d, g);
}

}  // namespace heads_in_lanes
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_DRIVER_H_
