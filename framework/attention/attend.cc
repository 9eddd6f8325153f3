#include "framework/attention/attend.h"

#include <atomic>

#include "framework/attention/key_state.h"
#include "framework/attention/mask.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
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

// The bias description for the fused kernel; `fusable` false when the
// position plugin's bias cannot be computed inside the kernel.
PositionEncoding::FusedLogitBias FusedBias(const AttentionContext& c, int64_t heads) {
  if (c.logit_bias == nullptr) return {true, {}};
  return c.logit_bias->FusedLogitBiasFor(heads);
}

// q (B, H, T, hs), k (B, G, S, hs), v (B, G, S, hs_v) -> (B, H, T, hs_v)
// through Backend::FusedAttention.
Var FusedAttend(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  FusedAttentionDesc d;
  d.batch = q.dim(0), d.heads = q.dim(1), d.queries = q.dim(2), d.head_dim = q.dim(3);
  d.kv_heads = k.dim(1), d.keys = k.dim(2), d.value_dim = v.dim(3);
  d.scale = *c.score->FusedDotProductScale();
  d.mask = c.mask;
  d.alibi_slopes = FusedBias(c, d.heads).alibi_slopes;
  d.alibi_offset = c.position_offset;
  if (c.ctx.training && c.dropout > 0.0f) {
    d.dropout = c.dropout;
    d.dropout_stream = c.owner->DropoutStream(c.ctx, "attention_weights");
  }
  FusedCalls().fetch_add(1);
  return FusedAttention(q, k, v, d);  // (B, H, T, hs_v)
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

bool TakesFusedPath(const AttentionContext& c, int64_t heads, int64_t t, int64_t s) {
  if (Policy() == AttentionKernel::kUnfused) return false;
  if (Policy() == AttentionKernel::kAuto && t * s < kFusedAttentionMinPairs) return false;
  const Backend& backend = CurrentBackend();
  if (!backend.Implements(Kernel::kFusedAttention) ||
      !backend.Implements(Kernel::kFusedAttentionBackward))
    return false;
  if (!c.score->FusedDotProductScale().has_value()) return false;
  if (c.probe != nullptr && *c.probe) return false;  // the weights are wanted
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
  return c;
}

Var Attend(const Var& q_in, const NewKeysOrValues& new_keys, const NewKeysOrValues& new_values,
           const AttentionContext& c) {
  TVLAB_CHECK(c.score != nullptr) << "attention needs a score plugin";
  TVLAB_CHECK(c.owner != nullptr) << "attention needs its owner module";
  Var q = c.rotation ? c.rotation->RotateQueryOrKey(q_in, c.position_offset) : q_in;  // (B, H, T, hs)
  Var k = CachedKeyState(c.cache, c.cross_attention, c.position_offset, "k", /*token_dim=*/2, [&] {
    Var fresh = new_keys();  // (B, G, S_new, hs)
    return c.rotation ? c.rotation->RotateQueryOrKey(fresh, c.position_offset) : fresh;
  });  // (B, G, S, hs) over every key
  Var v = CachedKeyState(c.cache, c.cross_attention, c.position_offset, "v", /*token_dim=*/2,
                         new_values);  // (B, G, S, hs_v)
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), g = k.dim(1);
  TVLAB_CHECK(g > 0 && h % g == 0) << g << " key/value heads for " << h << " query heads";
  TVLAB_CHECK(v.dim(1) == g && v.dim(2) == k.dim(2)) << "keys and values disagree";

  if (TakesFusedPath(c, h, t, k.dim(2))) return FusedAttend(q, k, v, c);  // (B, H, T, hs_v)

  Var logits = GroupedLogits(*c.score, q, k);  // (B, H, T, S)
  const int64_t s = logits.dim(3);
  if (c.logit_bias != nullptr) {
    Var bias = c.logit_bias->LogitBias(h, c.position_offset, t, s);  // (1 or B, H, T, S)
    if (bias.defined()) logits = Add(logits, bias);
  }
  Tensor mask = MaskBias(c.mask, b, t, s);  // (1 or B, 1, T, S): 0 or -inf
  if (mask.defined()) logits = Add(logits, Var(mask));
  Var weights = Softmax(logits);  // (B, H, T, S), rows sum to 1 over visible keys
  if (c.probe != nullptr && *c.probe) (*c.probe)(c.owner->path(), weights.value());
  if (c.ctx.training && c.dropout > 0.0f)
    weights = Dropout(weights, c.dropout, c.owner->DropoutStream(c.ctx, "attention_weights"));
  return GroupedWeightedSum(weights, v);  // (B, H, T, hs_v)
}

Var Attend(const Var& q, const Var& k, const Var& v, const AttentionContext& c) {
  return Attend(q, NewKeysOrValues([&] { return k; }), NewKeysOrValues([&] { return v; }), c);
}

}  // namespace tvlab
