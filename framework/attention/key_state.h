#ifndef TVLAB_FRAMEWORK_ATTENTION_KEY_STATE_H_
#define TVLAB_FRAMEWORK_ATTENTION_KEY_STATE_H_

// Where a layout meets the KV cache and the position plugin, for the parts
// Attend (attend.h) does not do itself. Attend uses these for the "k" and
// "v" it caches; a layout that caches something else (MLA: a latent and a
// shared rotary key) calls them directly and hands Attend the finished keys
// with caching and rotation off.

#include <functional>
#include <string>

#include "framework/attention/kv_cache.h"
#include "framework/autograd/var.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/position_encoding.h"

namespace tvlab {

// The per-key state `name` (e.g. "k"), tokens along `token_dim`, over every
// key. `compute` makes the state of the keys this call brings:
//   cache == nullptr:   compute()
//   self-attention:     cached tokens ++ compute() of the new tokens
//   cross-attention:    compute() on the first call, the stored state after
// window > 0 (the self-attention mask's, attention_mask.h): the cache keeps
// only the last `window` tokens (kv_cache.h), so the result's first key may
// be a later position than 0.
// REQUIRES (self-attention with a cache): position_offset equals the tokens
// appended under `name` so far, KvCache::Seen (the contract in kv_cache.h).
Var CachedKeyState(KvCache* cache, bool cross_attention, int64_t position_offset,
                   const std::string& name, int token_dim, const std::function<Var()>& compute,
                   int64_t window = 0);

// CachedKeyState with the cache, kind, offset and mask window of `in`.
Var KeyState(const AttentionInput& in, const std::string& name, int token_dim,
             const std::function<Var()>& compute);

// The position plugin as it acts inside attention: in.position for
// self-attention, nullptr for cross-attention. Positions relate a sequence
// to itself; in cross-attention queries and keys are different sequences,
// so neither rotary positions nor a logit bias (ALiBi, T5) apply.
const PositionEncoding* SelfAttentionPosition(const AttentionInput& in);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_KEY_STATE_H_
