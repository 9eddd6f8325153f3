#include "framework/attention/attend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "framework/attention/attention_statistics.h"
#include "framework/attention/key_state.h"
#include "framework/attention/mask.h"
#include "framework/attention/query_chunks.h"
#include "framework/autograd/checkpoint.h"
#include "framework/autograd/matmul_precision.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/backend/backend_registry.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// q (B, H, T, hs), k (B, G, S, hs) -> logits (B, H, T, S), query head h
// against key head h / (H / G), without repeating k.
Var GroupedLogits(const AttentionScore& score, const Var& q, const Var& k) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), hs = q.dim(3);
  const int64_t g = k.dim(1), s = k.dim(2);
  if (g == h) return score.Logits(q, k);  // (B, H, T, hs) x (B, H, S, hs) -> (B, H, T, S)
  Var q_groups = Reshape(q, {b, g, (h / g) * t, hs});  // (B, G, (H/G)*T, hs), a view
  Var logits = score.Logits(q_groups, k);  // (B, G, (H/G)*T, hs) x (B, G, S, hs) -> (B, G, (H/G)*T, S)
  return Reshape(logits, {b, h, t, s});    // (B, H, T, S), a view
}

// weights (B, H, T, S), v (B, G, S, hs_v) -> (B, H, T, hs_v), query head h
// reading value head h / (H / G), without repeating v.
Var GroupedWeightedSum(const Var& weights, const Var& v) {
  const int64_t b = weights.dim(0), h = weights.dim(1), t = weights.dim(2), s = weights.dim(3);
  const int64_t g = v.dim(1), hs_v = v.dim(3);
  if (g == h) return MatMul(weights, v);  // (B, H, T, S) x (B, H, S, hs_v) -> (B, H, T, hs_v)
  Var grouped = Reshape(weights, {b, g, (h / g) * t, s});  // (B, G, (H/G)*T, S), a view
  Var out = MatMul(grouped, v);  // (B, G, (H/G)*T, S) x (B, G, S, hs_v) -> (B, G, (H/G)*T, hs_v)
  return Reshape(out, {b, h, t, hs_v});  // (B, H, T, hs_v), a view
}

AttentionKernel& Policy() {
  static AttentionKernel policy = AttentionKernel::kAuto;
  return policy;
}

std::atomic<int64_t>& FusedCalls() {
  static std::atomic<int64_t> calls{0};
  return calls;
}

std::atomic<int64_t>& UnfusedCalls() {  // whole or query-chunked composition
  static std::atomic<int64_t> calls{0};
  return calls;
}

// The bias description for the fused kernel; `fusable` false when the
// position plugin's bias cannot be computed inside the kernel.
PositionEncoding::FusedLogitBias FusedBias(const AttentionContext& c, int64_t heads) {
  if (c.logit_bias == nullptr) return {true, {}};
  return c.logit_bias->FusedLogitBiasFor(heads);
}

// Where query and key/value heads meet in the fused kernel: (B, H, T, hs)
// queries against (B, G, S, hs) keys and (B, G, S, hs_v) values, whatever
// their layout.
struct FusedSizes {
  int64_t batch, heads, kv_heads, queries, keys, head_dim, value_dim;
};

// The fused kernel's description of context `c` at `z` with the position
// plugin's fused `bias` (its bucket table's values come as a Var: the
// caller's FusedAttention argument). REQUIRES: the score fuses.
FusedAttentionDesc FusedDescFor(const AttentionContext& c, const PositionEncoding::FusedLogitBias& bias,
                                const FusedSizes& z) {
  FusedAttentionDesc d;
  d.batch = z.batch, d.heads = z.heads, d.queries = z.queries, d.head_dim = z.head_dim;
  d.kv_heads = z.kv_heads, d.keys = z.keys, d.value_dim = z.value_dim;
  d.scale = *c.score->FusedDotProductScale();
  d.mask = c.mask;
  d.alibi_slopes = bias.alibi_slopes;
  d.alibi_offset = c.position_offset;
  if (bias.bucket_table.defined()) {
    d.bucket_bias.rule = bias.bucket_rule;
    d.bucket_bias.query_offset = c.position_offset;
  }
  d.precision = CurrentMatMulPrecision();  // runtime.precision, as the unfused path's MatMuls
  if (c.extras != nullptr) d.logit_softcap = c.extras->options().logit_softcap;
  if (c.ctx.training && c.dropout > 0.0f) {
    d.dropout = c.dropout;
    // A data-parallel shard's weights start at an even element (TakesFusedPath).
    const RngStream stream = c.owner->DropoutStream(c.ctx, "attention_weights");
    d.dropout_stream = stream.SkipWords(stream.ShardFirstElement(d.batch * d.heads * d.queries * d.keys) / 2);
  }
  return d;
}

// q (B, H, T, hs), k (B, G, S, hs), v (B, G, S, hs_v) -> (B, H, T, hs_v)
// through Backend::FusedAttention.
Var FusedAttend(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  const PositionEncoding::FusedLogitBias bias = FusedBias(c, q.dim(1));
  const FusedAttentionDesc d =
      FusedDescFor(c, bias, {q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)});
  const Var sink_logits = c.extras != nullptr ? c.extras->SinkLogits(d.heads) : Var();  // (H) or undefined
  FusedCalls().fetch_add(1);
  return FusedAttention(q, k, v, d, sink_logits, bias.bucket_table);  // (B, H, T, hs_v)
}

// Dropout of the weights (B, H, rows, S) of queries [first, first + rows)
// out of T: the factors Backend::DropoutMask draws for the whole
// (B, H, T, S) tensor at those positions, so that a chunked pass drops
// exactly what the whole one does. Drawn on the host (RngStream is a pure
// function of the index) and multiplied in like Dropout.
Var DropoutOfQueryRows(const Var& weights, float p, const RngStream& stream, int64_t first,
                       int64_t all_queries) {
  const int64_t bh = weights.dim(0) * weights.dim(1), rows = weights.dim(2), s = weights.dim(3);
  std::vector<float> keep(static_cast<size_t>(bh * rows * s));  // (B, H, rows, S)
  std::vector<uint32_t> words;
  // A data-parallel shard's whole tensor starts at this element of the
  // global batch's (0 in one process; rng.h).
  const int64_t shard_first = static_cast<int64_t>(stream.ShardFirstElement(bh * all_queries * s));
  for (int64_t i = 0; i < bh; ++i) {  // rows [first, first + rows) of (b, h) = i
    const int64_t begin = shard_first + (i * all_queries + first) * s, n = rows * s;
    DropoutFactors(stream, p, begin, n, keep.data() + i * n, words);  // host: the factors, uploaded below
  }
  return Mul(weights, Var(Tensor::FromVector(weights.shape(), keep)));
}

// The composition, for queries [first_query, first_query + T) of
// all_queries (the whole call when first_query = 0 and T = all_queries):
// q (B, H, T, hs), k (B, G, S, hs), v (B, G, S, hs_v) -> (B, H, T, hs_v).
Var UnfusedAttend(const Var& q, const Var& k, const Var& v, const AttentionContext& c,
                  int64_t first_query, int64_t all_queries) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2);
  const bool whole = first_query == 0 && t == all_queries;
  Var logits = GroupedLogits(*c.score, q, k);  // (B, H, T, S)
  const int64_t s = logits.dim(3);
  if (c.logit_bias != nullptr) {
    Var bias = c.logit_bias->LogitBias(h, c.position_offset + first_query, t, s);  // (1 or B, H, T, S)
    if (bias.defined()) logits = Add(logits, bias);
  }
  if (c.extras != nullptr) logits = c.extras->SoftCap(logits);  // (B, H, T, S)
  AttentionMask mask = c.mask;
  mask.causal_offset += first_query;  // query i of the chunk is query first_query + i
  Tensor mask_bias = MaskBias(mask, b, t, s);  // (1 or B, 1, T, S): 0 or -inf
  if (mask_bias.defined()) logits = Add(logits, Var(mask_bias));
  // (B, H, T, S), rows sum to 1 over visible keys (to <= 1 with a sink)
  Var weights = c.extras != nullptr ? c.extras->Softmax(logits) : Softmax(logits);
  if (c.probe != nullptr && *c.probe) (*c.probe)(c.owner->path(), weights.value());
  if (AttentionStatistics* stats = AttentionStatistics::Current())  // a training probe's forward
    stats->Record(c.owner->path(), logits.value(), weights.value());
  if (c.ctx.training && c.dropout > 0.0f) {
    const RngStream stream = c.owner->DropoutStream(c.ctx, "attention_weights");
    weights = whole ? Dropout(weights, c.dropout, stream)
                    : DropoutOfQueryRows(weights, c.dropout, stream, first_query, all_queries);
  }
  return GroupedWeightedSum(weights, v);  // (B, H, T, hs_v)
}

int64_t& ChunkRowsOverride() {
  static int64_t rows = 0;
  return rows;
}

std::atomic<int64_t>& ChunkedCalls() {
  static std::atomic<int64_t> calls{0};
  return calls;
}

int64_t ChunkRows(int64_t s) {
  return ChunkRowsOverride() > 0 ? ChunkRowsOverride() : QueryChunkRows(s);
}

bool TakesQueryChunkedPath(const AttentionContext& c, int64_t t, int64_t s) {
  if (Policy() == AttentionKernel::kUnfused) return false;  // the oracle: whole
  if (c.probe != nullptr && *c.probe) return false;          // the weights are wanted whole
  if (AttentionStatistics::Current() != nullptr) return false;  // so are their statistics
  return ChunkRowsOverride() > 0 ? t > ChunkRowsOverride() : ChunksQueries(t, s);
}

// The composition a chunk of queries at a time, each chunk checkpointed:
// only its inputs (the chunk's queries, k, v) are kept for backward, which
// recomputes the chunk's (B, H, rows, S) intermediates.
// q (B, H, T, hs), k (B, G, S, hs), v (B, G, S, hs_v) -> (B, H, T, hs_v).
Var QueryChunkedAttend(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  const int64_t t = q.dim(2), rows = ChunkRows(k.dim(2));
  ChunkedCalls().fetch_add(1);
  std::vector<Var> parts;
  for (int64_t first = 0; first < t; first += rows) {
    const int64_t n = std::min(rows, t - first);
    Var q_chunk = Slice(q, 2, first, n);  // (B, H, n, hs)
    parts.push_back(Checkpoint(
        [c, first, t](const std::vector<Var>& in) {
          return UnfusedAttend(in[0], in[1], in[2], c, first, t);  // (B, H, n, hs_v)
        },
        {q_chunk, k, v}));
  }
  return Concat(parts, 2);  // (B, H, T, hs_v)
}

// q (B, H, T, hs), k (B, G, S, hs), v (B, G, S, hs_v) -> (B, H, T, hs_v) on
// the path the policy, backend and plugins allow.
Var AttendOverKeys(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  const int64_t h = q.dim(1), t = q.dim(2), s = k.dim(2);
  if (TakesFusedPath(c, h, t, s)) return FusedAttend(q, k, v, c);  // (B, H, T, hs_v)
  UnfusedCalls().fetch_add(1);
  if (TakesQueryChunkedPath(c, t, s)) return QueryChunkedAttend(q, k, v, c);  // (B, H, T, hs_v)
  return UnfusedAttend(q, k, v, c, /*first_query=*/0, /*all_queries=*/t);  // (B, H, T, hs_v)
}

// Whether `c` lets token-major q, k, v reach the fused kernel as they are:
// no cache, no rotation (LeavesQueriesAndKeysAlone) or one that turns
// token-major rows (RotatesTokenMajor: rope, xpos), no position bias, extras
// (sinks, soft-cap, QK-norm, gate) or value mixing; no weights wanted
// (probe, statistics); a score that fuses; a policy other than "unfused";
// and a dropout draw the kernel can start (TakesFusedPath).
bool ContextTakesTokenMajor(const AttentionContext& c, int64_t heads, int64_t t, int64_t s) {
  if (Policy() == AttentionKernel::kUnfused || c.cache != nullptr || c.extras != nullptr || c.mix_values)
    return false;
  // A test that sets chunk rows wants the chunked composition under "auto".
  if (Policy() == AttentionKernel::kAuto && ChunkRowsOverride() > 0) return false;
  if (c.rotation != nullptr && !c.rotation->LeavesQueriesAndKeysAlone() && !c.rotation->RotatesTokenMajor())
    return false;
  const PositionEncoding::FusedLogitBias bias = FusedBias(c, heads);  // none at all, or no token-major
  if (!bias.fusable || !bias.alibi_slopes.empty() || bias.bucket_table.defined()) return false;
  if ((c.probe != nullptr && *c.probe) || AttentionStatistics::Current() != nullptr) return false;
  if (c.ctx.training && c.dropout > 0.0f && c.ctx.shard_first_row * heads * t * s % 2 != 0) return false;
  return c.score->FusedDotProductScale().has_value();
}

// A sliding window's cache dropped the keys before absolute position
// `first_key` (kv_cache.h): key j of k and v sits at first_key + j. The mask
// (documents included) and the position bias, stated by the caller over
// positions from 0, are restated over the held keys (every distance p - j
// stays the same).
Var AttendOverHeldKeys(const Var& q, const Var& k, const Var& v, const AttentionContext& c,
                       int64_t first_key) {
  AttentionContext held = c;
  held.mask.causal_offset -= first_key;
  for (int64_t& length : held.mask.key_lengths) length = std::max<int64_t>(length - first_key, 0);
  DropDocumentPositionsBefore(&held.mask, q.dim(0), first_key);  // the tables' columns too
  held.position_offset -= first_key;  // the bias's query position (rotation is done)
  return AttendOverKeys(q, k, v, held);
}

}  // namespace

void SetAttentionKernel(AttentionKernel kernel) { Policy() = kernel; }
AttentionKernel CurrentAttentionKernel() { return Policy(); }

std::optional<AttentionKernel> ParseAttentionKernel(const std::string& name) {
  if (name == "auto") return AttentionKernel::kAuto;
  if (name == "fused") return AttentionKernel::kFused;
  if (name == "unfused") return AttentionKernel::kUnfused;
  return std::nullopt;
}
int64_t FusedAttentionCalls() { return FusedCalls().load(); }
int64_t UnfusedAttentionCalls() { return UnfusedCalls().load(); }
int64_t QueryChunkedAttentionCalls() { return ChunkedCalls().load(); }
void SetQueryChunkRowsForTesting(int64_t rows) { ChunkRowsOverride() = rows; }

bool TakesFusedPath(const AttentionContext& c, int64_t heads, int64_t t, int64_t s) {
  if (Policy() == AttentionKernel::kUnfused) return false;
  if (Policy() == AttentionKernel::kAuto && t * s < kFusedAttentionMinPairs) return false;
  const BackendDescriptor& backend = CurrentBackendDescriptor();
  if (!backend.Implements(Kernel::kFusedAttention) ||
      !backend.Implements(Kernel::kFusedAttentionBackward))
    return false;
  if (!c.score->FusedDotProductScale().has_value()) return false;
  if (c.probe != nullptr && *c.probe) return false;  // the weights are wanted
  if (AttentionStatistics::Current() != nullptr) return false;  // their statistics are (attention_statistics.h)
  // The kernels draw dropout two weights per word from word 0: a batch shard
  // whose weights start at an odd element of the global batch's (odd first
  // row and odd heads * t * s) takes the unfused path, which can.
  if (c.ctx.training && c.dropout > 0.0f && c.ctx.shard_first_row * heads * t * s % 2 != 0) return false;
  return FusedBias(c, heads).fusable;
}

AttentionContext ContextFor(const AttentionInput& in, const Module& owner, float dropout) {
  AttentionContext c;
  c.score = in.score;
  c.mask = in.mask;
  c.rotation = SelfAttentionPosition(in);
  c.logit_bias = SelfAttentionPosition(in);
  c.position_offset = in.position_offset;
  c.cache = in.cache;
  c.cross_attention = in.memory.defined();
  c.dropout = dropout;
  c.ctx = in.ctx;
  c.probe = in.probe;
  c.owner = &owner;
  c.extras = in.extras;
  c.gate_input = in.x;
  c.mix_values = in.mix_values;
  return c;
}

Var Attend(const Var& q_in, const NewKeysOrValues& new_keys, const NewKeysOrValues& new_values,
           const AttentionContext& c) {
  TVLAB_CHECK(c.score != nullptr) << "attention needs a score plugin";
  TVLAB_CHECK(c.owner != nullptr) << "attention needs its owner module";
  const AttentionExtras* extras = c.extras;
  const AttentionExtras* qk_norm = c.qk_normalized ? nullptr : extras;
  Var q = qk_norm != nullptr ? qk_norm->NormalizeQuery(q_in) : q_in;  // (B, H, T, hs)
  if (c.rotation) q = c.rotation->RotateQuery(q, c.position_offset);
  const int64_t window = c.mask.window;
  Var k = CachedKeyState(c.cache, c.cross_attention, c.position_offset, "k", /*token_dim=*/2, [&] {
    Var fresh = new_keys();  // (B, G, S_new, hs)
    if (qk_norm != nullptr) fresh = qk_norm->NormalizeKey(fresh);
    return c.rotation ? c.rotation->RotateKey(fresh, c.position_offset) : fresh;
  }, window);  // (B, G, S, hs) over every key the cache holds
  const NewKeysOrValues mixed_values = [&] {
    return c.mix_values ? c.mix_values(new_values()) : new_values();  // (B, G, S_new, hs_v)
  };
  Var v = CachedKeyState(c.cache, c.cross_attention, c.position_offset, "v", /*token_dim=*/2,
                         mixed_values, window);  // (B, G, S, hs_v)
  const int64_t h = q.dim(1), t = q.dim(2), g = k.dim(1);
  TVLAB_CHECK(g > 0 && h % g == 0) << g << " key/value heads for " << h << " query heads";
  TVLAB_CHECK(v.dim(1) == g && v.dim(2) == k.dim(2)) << "keys and values disagree";

  const int64_t s = k.dim(2);
  // The sink, soft-cap and gate do not depend on key positions: the same
  // over the keys a window's cache holds.
  const Var out = !c.cross_attention && window > 0 && c.position_offset + t > s
                      ? AttendOverHeldKeys(q, k, v, c, c.position_offset + t - s)
                      : AttendOverKeys(q, k, v, c);  // (B, H, T, hs_v)
  return extras != nullptr ? extras->GateOutput(out, c.gate_input) : out;  // (B, H, T, hs_v)
}

Var Attend(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  return Attend(q, NewKeysOrValues([&] { return k; }), NewKeysOrValues([&] { return v; }), c);
}

Var AttendTokenMajor(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  TVLAB_CHECK(c.cache == nullptr) << "AttendTokenMajor takes no cache (Attend does)";
  const int64_t b = q.dim(0), t = q.dim(1), h = q.dim(2), s = k.dim(1), g = k.dim(2);
  TVLAB_CHECK(g > 0 && h % g == 0) << g << " key/value heads for " << h << " query heads";
  if (ContextTakesTokenMajor(c, h, t, s)) {
    FusedAttentionDesc d = FusedDescFor(c, {true, {}}, {b, h, g, t, s, q.dim(3), v.dim(3)});
    d.token_major = true;
    if (CurrentBackend().PrefersTokenMajorFusedAttention(d)) {
      FusedCalls().fetch_add(1);
      if (c.rotation == nullptr || c.rotation->LeavesQueriesAndKeysAlone())
        return FusedAttention(q, k, v, d);  // (B, T, H, hs_v)
      return FusedAttention(c.rotation->RotateQueryTokenMajor(q, c.position_offset),
                            c.rotation->RotateKeyTokenMajor(k, c.position_offset), v, d);  // (B, T, H, hs_v)
    }
  }
  const std::vector<int> swap = {0, 2, 1, 3};  // (B, T, H, x) <-> (B, H, T, x)
  return Permute(Attend(Permute(q, swap), Permute(k, swap), Permute(v, swap), c), swap);  // (B, T, H, hs_v)
}

}  // namespace tvlab
