#ifndef TVLAB_FRAMEWORK_INTERFACES_ATTENTION_SCORE_H_
#define TVLAB_FRAMEWORK_INTERFACES_ATTENTION_SCORE_H_

// AttentionScore: how a query and a key become a logit (before masking and
// softmax). Examples: dot product q.k, scaled q.k/sqrt(hs), additive
// v^T tanh(W_q q + W_k k). A score may own parameters (it is a Module).

#include <optional>

#include "framework/autograd/var.h"
#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/nn/module.h"

namespace tvlab {

class AttentionScore : public Module {
 public:
  // q (B, H, T, hs), k (B, H, S, hs) -> logits (B, H, T, S).
  // Contract: dim 1 is a batch of heads (parameters, if any, shared by all)
  // and the logit of query row i depends only on that row and the keys.
  // Grouped layouts rely on it: Attend (framework/attention/attend.h) calls
  // this with q viewed as (B, G, (H/G)*T, hs) against G key heads.
  virtual Var Logits(const Var& q, const Var& k) const = 0;

  // Declares the score fusable: when it is `scale * q . k` (no parameters,
  // nothing per pair but the dot product), returns that scale, and Attend
  // may run the fused attention kernel instead of Logits + softmax + matmul
  // (framework/backend/fused_attention.h). nullopt (the default) keeps the
  // unfused composition. The conformance suite checks fused == unfused for
  // every score that declares it.
  virtual std::optional<float> FusedDotProductScale() const { return std::nullopt; }
};

using AttentionScoreEntry = PluginEntry<AttentionScore, ModelDims>;
Registry<AttentionScoreEntry>& AttentionScoreRegistry();

}  // namespace tvlab

// TVLAB_REGISTER_ATTENTION_SCORE("dot_product", DotProduct, DotProductOptions);
#define TVLAB_REGISTER_ATTENTION_SCORE(name, Class, Options) \
  TVLAB_REGISTER_PLUGIN(AttentionScoreRegistry, AttentionScore, ModelDims, name, Class, Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_ATTENTION_SCORE_H_
