#ifndef TVLAB_FRAMEWORK_MODEL_ATTENTION_CORE_H_
#define TVLAB_FRAMEWORK_MODEL_ATTENTION_CORE_H_

// Pieces every attention layout shares: splitting the width into heads and
// back, and softmax attention through the chosen score plugin. A layout is
// then only its projections and what it caches.

#include <functional>
#include <string>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/interfaces/attention_layout.h"

namespace tvlab {

// (B, T, H * hs) -> (B, H, T, hs)
Var SplitHeads(const Var& x, int64_t heads);
// (B, H, T, hs) -> (B, T, H * hs)
Var MergeHeads(const Var& x);

// Additive mask (1, 1, T, S) hiding keys after each query: query i (at
// absolute position offset + i) sees keys 0 .. offset + i.
Tensor CausalMaskBias(int64_t t, int64_t s, int64_t offset);
// Additive mask (B, 1, T, S) hiding keys at or beyond each sequence's length
// (padding at the end). Combines with `base` (e.g. a causal mask) if defined.
Tensor KeyPaddingMaskBias(const std::vector<int64_t>& key_lengths, int64_t t, int64_t s,
                          const Tensor& base);

// The per-key state `name` of a layout (e.g. "k"), tokens along `token_dim`;
// the one place a layout meets the KV cache. `compute` projects the keys'
// sequence (in.x for self-attention, in.memory for cross-attention):
//   no cache:            compute()
//   self-attention:      cached tokens ++ compute() of the new tokens
//   cross-attention:     compute() on the first call, the stored state after
// Self-attention with a cache requires in.position_offset == tokens cached.
Var KeyState(const AttentionInput& in, const std::string& name, int token_dim,
             const std::function<Var()>& compute);

// q (B, H, T, hs), k and v (B, H, S, hs) -> (B, H, T, hs):
// softmax(score(q, k) + position bias (self-attention only) + mask) @ v,
// with dropout on the weights in training. `owner` keys the dropout mask and
// names the layer for the probe.
Var Attend(const Var& q, const Var& k, const Var& v, const AttentionInput& in,
           const Module& owner, float dropout);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_ATTENTION_CORE_H_
