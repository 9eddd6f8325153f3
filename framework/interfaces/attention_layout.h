#ifndef TVLAB_FRAMEWORK_INTERFACES_ATTENTION_LAYOUT_H_
#define TVLAB_FRAMEWORK_INTERFACES_ATTENTION_LAYOUT_H_

// AttentionLayout: how heads are organised, projected and cached. MHA has H
// key/value heads, GQA G < H shared by groups of queries, MQA one, MLA a
// compressed latent. A layout owns its projections and works with any
// AttentionScore and PositionEncoding, for self- and cross-attention, with
// or without a KV cache (the contract is in framework/attention/kv_cache.h).
// Layouts are written with the attention kit (framework/attention/): heads,
// the KV cache, and Attend(), the one place scores, biases, masks, softmax,
// dropout and the weighted sum of values are composed.

#include <cstdint>
#include <functional>
#include <optional>

#include "framework/autograd/var.h"
#include "framework/interfaces/attention_score.h"
#include "framework/backend/attention_mask.h"
#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/interfaces/position_encoding.h"
#include "framework/nn/module.h"

namespace tvlab {

// Defined by the attention kit (framework/attention/kv_cache.h), which sits
// above this layer; the contracts only pass a pointer through.
class KvCache;
// Also the kit's (framework/attention/attention_extras.h): the attention
// options every layout honours and their parameters.
class AttentionExtras;

// Receives attention weights (B, H, T, S) per layer when inspection is on.
using AttentionProbe = std::function<void(const std::string& layer_path, const Tensor& weights)>;

struct AttentionInput {
  Var x;       // (B, T, C) the queries' sequence
  Var memory;  // (B, S, C) keys/values for cross-attention; undefined = self
  // Which keys each query sees (causal, key padding, a sliding window), as
  // a description (framework/backend/attention_mask.h); default = every key
  // visible.
  AttentionMask mask;
  int64_t position_offset = 0;  // position of x's first token
  const AttentionScore* score = nullptr;
  const PositionEncoding* position = nullptr;
  ForwardContext ctx;
  const AttentionProbe* probe = nullptr;
  // Incremental decoding state of this sublayer; nullptr = none. With a
  // cache, x holds only the new tokens and position_offset must equal the
  // tokens the cache has seen for self-attention (see kv_cache.h).
  KvCache* cache = nullptr;
  // The sublayer's attention options (QK-norm, soft-cap, sink, output gate),
  // applied by Attend; nullptr = none. Made by the block code, never by a
  // layout, which only passes it on (ContextFor).
  const AttentionExtras* extras = nullptr;
  // model.value_residual: maps the new tokens' values (B, G, S_new, hs) to
  // the values attended and cached (the block's mix with the first layer's);
  // empty = none. Layouts pass it on (ContextFor) and declare
  // kAttendsOnceWithNewValues.
  std::function<Var(const Var&)> mix_values;
};

class AttentionLayout : public Module {
 public:
  // -> (B, T, C)
  virtual Var Forward(const AttentionInput& in) const = 0;
  // KV-cache bytes one token adds to this layer, at `bytes_per_element`:
  // exactly what Forward stores in AttentionInput::cache per token and batch
  // row (2 * kv_heads * head_dim numbers for MHA/GQA/MQA).
  virtual int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const = 0;
  // Bytes of the fixed-size decoding state per batch row, whatever the
  // tokens seen: 0 for softmax layouts, the recurrent state of a mixer
  // (kRecurrentMixer: e.g. H * hs * hs numbers for linear attention).
  virtual int64_t RecurrentStateBytes(int64_t bytes_per_element) const {
    (void)bytes_per_element;
    return 0;
  }
  // Forward FLOPs per position of this layer's token mixing in training,
  // besides its parameters' matrix products (the cost model counts those as
  // 2 per parameter), for self-attention over sequences of `seq_len`
  // positions; training costs 3 times this (forward + backward).
  // std::nullopt (the default) = softmax attention: Q K^T and A V, 2 *
  // keys_seen * d_attn FLOPs each, where the cost model derives keys_seen
  // from the layer's mask (causal, window, memory tokens). A layout whose
  // mixing costs something else (a recurrent mixer's chunked form:
  // framework/attention/mixer_cost.h) overrides this, so the cost model
  // (framework/report/cost_model.h) needs no edit for a new mixer.
  virtual std::optional<double> MixingFlopsPerToken(int64_t seq_len) const {
    (void)seq_len;
    return std::nullopt;
  }
};

using AttentionLayoutEntry = PluginEntry<AttentionLayout, ModelDims>;
Registry<AttentionLayoutEntry>& AttentionLayoutRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_ATTENTION_LAYOUT(name, Class, Options)                             \
  TVLAB_REGISTER_PLUGIN(AttentionLayoutRegistry, AttentionLayout, ModelDims, name, Class, \
                        Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_ATTENTION_LAYOUT_H_
