#ifndef TVLAB_FRAMEWORK_INTERFACES_POSITION_ENCODING_H_
#define TVLAB_FRAMEWORK_INTERFACES_POSITION_ENCODING_H_

// PositionEncoding: how order enters the model. A plugin acts in one or more
// places, each a virtual with an identity default:
//   - added to token embeddings (sinusoidal, learned tables),
//   - applied to queries and keys inside attention (RoPE),
//   - a bias on attention logits (ALiBi, T5 relative bias).
// `none` overrides nothing, so the absence of positions can be ablated.

#include <vector>

#include "framework/autograd/var.h"
#include "framework/backend/relative_buckets.h"
#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/nn/module.h"

namespace tvlab {

class PositionEncoding : public Module {
 public:
  // x (B, T, C) holds tokens at positions [offset, offset + T) -> (B, T, C).
  virtual Var AddToEmbeddings(const Var& x, int64_t offset) const { return x; }
  // qk (B, H, T, hs) at positions [offset, offset + T) -> (B, H, T, hs): the
  // rotation queries and keys share; it must preserve every vector's norm.
  virtual Var RotateQueryOrKey(const Var& qk, int64_t offset) const { return qk; }
  // What attention applies to queries and to keys (before caching them),
  // same shapes: the shared rotation by default. A plugin may also scale
  // them, by factors that cancel to a function of the offset in q.k (xPos:
  // queries by zeta^(n/B), keys by zeta^(-m/B)).
  virtual Var RotateQuery(const Var& q, int64_t offset) const { return RotateQueryOrKey(q, offset); }
  virtual Var RotateKey(const Var& k, int64_t offset) const { return RotateQueryOrKey(k, offset); }
  // Additive logit bias for queries at [q_offset, q_offset + T) and keys at
  // [0, S): returns (1 or B, H, T, S), or an undefined Var for none.
  virtual Var LogitBias(int64_t num_heads, int64_t q_offset, int64_t t, int64_t s) const {
    return Var();
  }

  // What the fused attention kernel must add for this plugin's LogitBias,
  // computed inside its tiles instead of as a (T, S) table.
  struct FusedLogitBias {
    bool fusable = false;  // false: Attend keeps the unfused composition
    // bias[h, i, j] = -alibi_slopes[h] * |q_offset + i - j| (H slopes), or
    // empty for no bias at all.
    std::vector<double> alibi_slopes;
    // Or a bucketed relative bias (T5): bias[h, i, j] =
    // bucket_table[RelativePositionBucket(j - (q_offset + i), bucket_rule), h],
    // the table (num_buckets, H) a parameter (its gradient comes from the
    // fused backward); undefined for none.
    Var bucket_table;
    RelativeBucketRule bucket_rule;
  };
  // The default is "not fusable", which is always correct (only slower): a
  // plugin declares `{true, {}}` when LogitBias is none, its slopes when
  // the bias is ALiBi-shaped, or its table and rule when it is bucketed. The conformance suite checks fused == unfused
  // for every plugin that declares itself fusable.
  virtual FusedLogitBias FusedLogitBiasFor(int64_t num_heads) const { return {}; }

  // Whether RotateQuery and RotateKey are the identity (the plugin acts on
  // embeddings or logits only), so that attention may leave queries and
  // keys where the projections wrote them (AttendTokenMajor, attend.h). The
  // default, false, is always correct (only slower); the conformance suite
  // checks a plugin that says true against its capabilities and its hooks.
  virtual bool LeavesQueriesAndKeysAlone() const { return false; }

  // RotateQuery and RotateKey on token-major tensors, as the projections
  // write them: q (B, T, H, hs) at positions [offset, offset + T) ->
  // (B, T, H, hs), equal bit for bit (values and gradients) to permuting to
  // (B, H, T, hs), the head-major hook, and permuting back, which is what
  // the defaults do. A plugin that can turn rows where they lie (rope:
  // Backend::Rotary's token-major form) overrides them and says so in
  // RotatesTokenMajor; attention then reads token-major q and k with no
  // head permutes (AttendTokenMajor, attend.h). The conformance suite
  // checks the equality for every plugin.
  virtual bool RotatesTokenMajor() const { return false; }
  virtual Var RotateQueryTokenMajor(const Var& q, int64_t offset) const;
  virtual Var RotateKeyTokenMajor(const Var& k, int64_t offset) const;

  // Where a self-attention sublayer sits: the model's causal stack (a
  // decoder) or its bidirectional one (an encoder), and its layer there.
  struct Site {
    bool causal = false;
    int64_t layer = 0;
  };
  // The encoding the sublayer at `site` uses inside attention (rotation and
  // logit bias); itself by default. A plugin with parameters per stack or
  // per layer (t5_bias: a bias table each) returns the child that holds
  // them. BlockStack asks once per layer; AddToEmbeddings is never sited.
  virtual const PositionEncoding& AtSite(const Site& site) const { return *this; }
};

using PositionEncodingEntry = PluginEntry<PositionEncoding, ModelDims>;
Registry<PositionEncodingEntry>& PositionEncodingRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_POSITION_ENCODING(name, Class, Options)                              \
  TVLAB_REGISTER_PLUGIN(PositionEncodingRegistry, PositionEncoding, ModelDims, name, Class, \
                        Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_POSITION_ENCODING_H_
