#ifndef TVLAB_FRAMEWORK_ATTENTION_ATTEND_H_
#define TVLAB_FRAMEWORK_ATTENTION_ATTEND_H_

// Attend: the one entry point of attention. Every layout projects its
// queries, keys and values and calls it; Attend is the single place where
//
//   QK-norm -> rotate q and the new keys (RoPE) -> KV cache -> score(q, k)
//   -> + position logit bias -> soft-cap -> + mask -> softmax (with a sink)
//   -> probe -> dropout -> @ v -> output gate
//
// (QK-norm, soft-cap, sink and gate are the options of attention_extras.h,
// off unless AttentionContext::extras says otherwise.)
// is composed. Everything after the KV cache runs as one fused kernel
// (Backend::FusedAttention, framework/backend/fused_attention.h: no (T, S)
// buffer in forward or backward) when
//   - the policy allows it (runtime.attention, SetAttentionKernel): "auto"
//     when there are enough (query, key) pairs per head for the kernel to
//     pay (kFusedAttentionMinPairs), "fused" always, "unfused" never,
//   - the backend implements it,
//   - the score declares itself a scaled dot product (FusedDotProductScale),
//   - the position plugin's logit bias is none, ALiBi-shaped or bucketed
//     (FusedLogitBiasFor), and
//   - no probe asks for the weights (attention_dump gets them exactly from
//     the unfused path), and no AttentionStatistics scope is open (a
//     training probe's own forward: attention_statistics.h).
// Otherwise the unfused composition runs; it is the oracle the fused path
// is tested against (the attention conformance suite). When it has many
// queries (query_chunks.h: more than ~128 x 128 pairs per head) and the
// policy is not "unfused", it runs a chunk of queries at a time, each chunk
// checkpointed (recomputed in backward), so that a score without a fused
// kernel (additive) still keeps memory linear in T and S; "unfused" keeps
// the whole composition, the oracle of both. Dropout on the weights draws
// the same mask on all three paths. That is also why the mask arrives as a
// description (AttentionMask) and not as a table.
//
// Grouped heads. q has H heads; k and v may have G heads, G dividing H:
// query head h reads key/value head h / (H / G) (torch repeat_interleave,
// Llama's repeat_kv). Shared heads are never copied: q (B, H, T, hs) is
// contiguous as (B, G, (H/G) * T, hs), so the logits of group g are one
// batched product with its key head, and logits and weights move between
// (B, G, (H/G) * T, S) and (B, H, T, S) by free reshapes. G = H (MHA) runs
// exactly the ungrouped composition. Score plugins must therefore treat
// dim 1 as a batch of heads and dim 2 as independent query rows (every
// score in plugins/score does; see attention_score.h).
//
// Dimension legend: B batch, H query heads, G key/value heads, T queries,
// S keys (cached ones included), hs head size (v's may differ from q's).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "framework/attention/attention_extras.h"
#include "framework/attention/kv_cache.h"
#include "framework/autograd/var.h"
#include "framework/backend/attention_mask.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/attention_score.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/nn/module.h"

namespace tvlab {

// Everything Attend needs besides q, k and v.
struct AttentionContext {
  const AttentionScore* score = nullptr;  // required
  AttentionMask mask;                     // default: every key visible
  // Self-attention only; leave null for cross-attention (SelfAttentionPosition).
  //   rotation:   RotateQuery on q and RotateKey on the new keys, before caching;
  //   logit_bias: LogitBias(H, position_offset, T, S) added to the logits.
  const PositionEncoding* rotation = nullptr;
  const PositionEncoding* logit_bias = nullptr;
  int64_t position_offset = 0;  // position of the first query and first new key
  // Incremental decoding (contract in kv_cache.h): Attend stores the new keys
  // (rotated) as "k" and the values as "v", tokens along dim 2. nullptr =
  // no caching.
  KvCache* cache = nullptr;
  bool cross_attention = false;  // the cache holds a source (computed once)
  float dropout = 0.0f;          // on the attention weights, in training
  ForwardContext ctx;
  const AttentionProbe* probe = nullptr;  // receives weights (B, H, T, S)
  const Module* owner = nullptr;  // required: keys the dropout mask, names the probe's layer
  // The attention options (attention_extras.h) and the sublayer's input
  // x (B, T, C) their output gate reads; nullptr = none.
  const AttentionExtras* extras = nullptr;
  Var gate_input;
  // Set by a layout that rotates by itself and has applied the options'
  // QK-norm to q and the new keys before rotating them (differential), so
  // that Attend does not normalise again.
  bool qk_normalized = false;
  // Self-attention's value residual (AttentionInput::mix_values): applied to
  // the new values before they are cached; empty = none.
  std::function<Var(const Var&)> mix_values;
};

// The context of a layout's call: score, mask, offset, cache and probe from
// `in`; rotation and logit bias from the position plugin for self-attention
// only. A layout that rotates or caches by itself (MLA) clears `rotation`
// or `cache` afterwards.
AttentionContext ContextFor(const AttentionInput& in, const Module& owner, float dropout);

// Process-wide policy (runtime.attention).
enum class AttentionKernel {
  kAuto,     // fused where it applies and T * S >= kFusedAttentionMinPairs
  kFused,    // fused wherever it applies (score, position, backend, probe)
  kUnfused,  // always the composition
};
// Below this many (query, key) pairs per head the unfused composition's few
// large batched GEMMs beat the fused kernel's many small tiles (the sort
// model, T = S = 8: bench/README.md).
constexpr int64_t kFusedAttentionMinPairs = 64 * 64;
void SetAttentionKernel(AttentionKernel kernel);
AttentionKernel CurrentAttentionKernel();
// "auto", "fused" or "unfused" -> the policy; nullopt for anything else.
std::optional<AttentionKernel> ParseAttentionKernel(const std::string& name);

// Whether Attend would run the fused kernel for context `c` with `heads`
// query heads on the current backend.
// (T queries, S keys.)
bool TakesFusedPath(const AttentionContext& c, int64_t heads, int64_t t, int64_t s);
// How many Attend calls in this process took the fused kernel (tests prove
// with it that a comparison of the two paths really ran both).
int64_t FusedAttentionCalls();
// How many took the unfused composition (whole or query-chunked); with
// FusedAttentionCalls, what metrics.json records per run.
int64_t UnfusedAttentionCalls();
// The same for the query-chunked composition.
int64_t QueryChunkedAttentionCalls();
// Tests: chunks of `rows` queries whenever T > rows (0 restores the rule of
// query_chunks.h), so that small inputs exercise the chunked path (under
// "auto" AttendTokenMajor then takes the composition too).
void SetQueryChunkRowsForTesting(int64_t rows);

// Keys or values of the tokens this call brings, (B, G, S_new, hs). Called
// at most once each, and not at all when a cross-attention cache already
// holds the source (so memory is projected once per source).
using NewKeysOrValues = std::function<Var()>;

// q (B, H, T, hs); new keys (B, G, S_new, hs), new values (B, G, S_new, hs_v)
// -> (B, H, T, hs_v). With a self-attention cache, S = cached + S_new keys;
// without one S = S_new.
// REQUIRES: c.score and c.owner set; G divides H; k and v agree in G and S.
Var Attend(const Var& q, const NewKeysOrValues& new_keys, const NewKeysOrValues& new_values,
           const AttentionContext& c);
// The same with keys and values already computed.
Var Attend(const Var& q, const Var& k, const Var& v, const AttentionContext& c);

// Attention over keys and values already computed, every token's heads side
// by side as the projections write them: q (B, T, H, hs), k (B, S, G, hs),
// v (B, S, G, hs_v) -> (B, T, H, hs_v). Where the backend prefers the fused
// kernel token-major for the call (Backend::PrefersTokenMajorFusedAttention:
// cpu_onednn's AVX-512 short kernel, and its tiled kernels from 64 x 64
// query-key pairs on) and the context allows it (no cache, no rotation
// other than one that turns token-major rows (RotatesTokenMajor: rope and
// xpos, which then turn q and k where they lie), no position bias, extras or value
// mixing, no weights wanted, a fusing score, runtime.attention not
// "unfused"), the kernel reads them where they lie: no head permutes.
// Otherwise Attend between permutes, the same operations as SplitHeads /
// MergeHeads around it.
// REQUIRES: c.cache null; G divides H.
Var AttendTokenMajor(const Var& q, const Var& k, const Var& v, const AttentionContext& c);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_ATTEND_H_
