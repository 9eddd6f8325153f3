#ifndef TVLAB_FRAMEWORK_ATTENTION_KV_CACHE_H_
#define TVLAB_FRAMEWORK_ATTENTION_KV_CACHE_H_

// KvCache: one attention sublayer's state for incremental decoding.
//
// The contract between a model (the caller) and an AttentionLayout:
//
//  - The caller owns one KvCache per attention sublayer and passes it in
//    AttentionInput::cache (a decoder block with cross-attention owns two).
//    nullptr means no caching: training and encoders.
//  - Self-attention (AttentionInput::memory undefined). Each call brings T new
//    tokens at positions [position_offset, position_offset + T), and
//    position_offset must equal length(), the tokens already cached. The
//    layout computes the per-token state of the new tokens only (e.g. k and v
//    after RoPE), appends it, and attends over all length() + T tokens. The
//    caller's mask is described over those keys, e.g. CausalMask(offset)
//    (framework/backend/attention_mask.h). The first call is the prefill
//    (T = prompt length), later calls decode (usually T = 1). The result
//    equals running the whole sequence at once with a causal mask.
//  - Sliding window (mask.window = W > 0, model.attention.window): after
//    each call the cache keeps only the last W tokens of every entry, the
//    only ones a later query can see, so it never holds more than W (a
//    sliding buffer: KV bytes bounded by W, not by the tokens generated).
//    Seen() counts every token appended, length() the tokens held; a call
//    attends over the held and new tokens, key j at absolute position
//    Seen() - length() + j, and Attend restates the caller's mask and
//    position bias in those keys' indices (attend.h).
//  - Cross-attention (memory defined). The first call computes the source's
//    state from memory and stores it; later calls reuse it, so memory is
//    projected once per source. memory must stay set on every call (it marks
//    the call as cross-attention); the mask covers the S source keys.
//  - What is stored is the layout's choice, under names it picks (Attend in
//    framework/attention/attend.h stores "k" and "v" for mha/gqa/mqa; mla
//    stores "latent" and "rope_key" through KeyState, key_state.h). Bytes() measures it, and equals
//    B * length() * KvCacheBytesPerToken() of the layout (the conformance
//    suite checks this for every layout).
//  - Stored state is plain values, not part of the autograd tape: only the
//    current call's new tokens receive gradients. Decode under NoGradGuard.
//  - A cache is used for self- or for cross-attention, never both.
//  - Recurrent mixers (linear attention, GLA, RetNet: layouts declaring
//    kRecurrentMixer) keep a fixed-size state instead of per-token entries:
//    SetState replaces the entry `name` and counts the new tokens, so
//    length() still counts the tokens seen while Bytes() stays constant in
//    T, and equals B * the layout's RecurrentStateBytes() (the conformance
//    suite checks it). Such a layout reports KvCacheBytesPerToken() = 0.
//
// Not thread-safe: one decoding loop owns a cache.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "framework/autograd/var.h"

namespace tvlab {

class KvCache {
 public:
  enum class Use { kUnused, kSelf, kCross };

  // Self-attention: appends `fresh` (the new tokens' state, tokens along
  // `token_dim`, batch along dim 0) to entry `name` and returns the cached
  // and the fresh tokens together. The first append fixes the entry's shape.
  // keep_last > 0 then keeps only the entry's last keep_last tokens (a
  // sliding window; the returned tokens are all of them).
  Var Append(const std::string& name, const Var& fresh, int token_dim, int64_t keep_last = 0);

  // Cross-attention: entry `name` (source tokens along `token_dim`), made by
  // `compute` on the first call and returned as stored afterwards.
  Var Source(const std::string& name, int token_dim, const std::function<Var()>& compute);

  // Recurrent mixers: replaces entry `name` by `state` (a fixed-size
  // tensor, batch along dim 0) and counts `new_tokens` more tokens seen.
  // Every state entry of a cache must see the same tokens per call.
  void SetState(const std::string& name, const Tensor& state, int64_t new_tokens);
  // The state stored under `name`, or nullptr before the first SetState.
  const Tensor* State(const std::string& name) const;

  // Tokens held by entry `name` (0 if absent); for a state entry, the
  // tokens it has seen.
  int64_t Length(const std::string& name) const;
  // Tokens ever appended to entry `name`: held plus dropped by a window.
  int64_t Seen(const std::string& name) const;
  // Tokens held: generated so far (self) or source tokens (cross). Every
  // entry holds the same number after a complete call.
  int64_t length() const;
  Use use() const { return use_; }

  // Entry names, sorted; Get aborts on a name that is not there.
  std::vector<std::string> Names() const;
  const Tensor& Get(const std::string& name) const;
  // The dimension of entry `name` that indexes tokens.
  int TokenDim(const std::string& name) const;

  // Numbers stored over all entries and batch rows, and their size in bytes.
  int64_t NumElements() const;
  int64_t Bytes(int64_t bytes_per_element) const { return NumElements() * bytes_per_element; }

  // Keeps batch rows `rows` in that order (repeats allowed): beam search
  // reorders its hypotheses this way.
  void SelectRows(const std::vector<int64_t>& rows);
  // Forgets everything (a new sequence).
  void Clear();

 private:
  struct Entry {
    Tensor value;
    int token_dim = 0;
    int64_t dropped = 0;  // tokens before the held ones (sliding window)
    int64_t state_tokens = -1;  // >= 0: a fixed-size state that has seen these tokens
  };
  void Claim(Use use);

  std::map<std::string, Entry> entries_;
  Use use_ = Use::kUnused;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_KV_CACHE_H_
