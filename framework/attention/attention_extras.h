#ifndef TVLAB_FRAMEWORK_ATTENTION_ATTENTION_EXTRAS_H_
#define TVLAB_FRAMEWORK_ATTENTION_ATTENTION_EXTRAS_H_

// AttentionExtras: the attention options every layout honours without
// knowing them (model.attention.logit_softcap, sink, qk_norm, output_gate;
// docs/attention.md), and the learned parameters they need. The block code
// (framework/model) makes one per attention sublayer beside the layout,
// only when some option is on, and passes it through AttentionInput::extras
// to Attend, which applies each option at its one place:
//
//   q, new keys  -> QK-norm (per head, over hs)  -> RoPE -> KV cache
//   score + position bias -> soft-cap -> + mask -> softmax (with the sink)
//   -> dropout -> @ v -> output gate  -> (the layout's output projection)
//
// Soft-cap and sink run inside the fused kernel (FusedAttentionDesc's
// logit_softcap and sink_logits); QK-norm and the gate act on Attend's
// inputs and output, so every path (fused, query-chunked, whole) sees them.
// A layout that rotates by itself (MLA) calls Attend with rotation cleared:
// there QK-norm acts on the assembled heads, after the decoupled part's
// rotation (RMSNorm's normalisation commutes with a rotation; its learned
// scale and LayerNorm's mean do not).
//
// Parameter names (under the block, "attention_options" for self- and
// "cross_attention_options" for cross-attention): "q_norm", "k_norm" (hs),
// "sink_logits" (H, LEARNED only), "gate.weight" (H or H * hs, C) and
// "gate.bias".
//
// Dimension legend: B batch, H query heads, G key/value heads, T queries,
// S keys, hs head size, C model width.

#include <memory>

#include "framework/autograd/var.h"
#include "framework/interfaces/model_dims.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"

namespace tvlab {

// The options, as plain values (BuildModel converts the spec's).
struct AttentionOptions {
  enum class Sink { kNone, kOffByOne, kLearned };
  enum class QkNorm { kNone, kRmsNorm, kLayerNorm };
  enum class OutputGate { kNone, kHeadwise, kElementwise };
  float logit_softcap = 0.0f;  // 0 = off
  Sink sink = Sink::kNone;
  QkNorm qk_norm = QkNorm::kNone;
  OutputGate output_gate = OutputGate::kNone;
  // Whether any option is on (otherwise no AttentionExtras is made).
  bool any() const {
    return logit_softcap > 0.0f || sink != Sink::kNone || qk_norm != QkNorm::kNone ||
           output_gate != OutputGate::kNone;
  }
};

class AttentionExtras : public Module {
 public:
  // REQUIRES: options.logit_softcap >= 0 (validated by model_spec).
  AttentionExtras(const AttentionOptions& options, const ModelDims& dims);
  const AttentionOptions& options() const { return options_; }

  // q (B, H, T, hs) or new keys (B, G, S, hs) -> the same, normalised over
  // hs per head and times the learned scale; unchanged when QK-norm is off.
  Var NormalizeQuery(const Var& q) const;
  Var NormalizeKey(const Var& k) const;
  // logits (B, H, T, S) -> c * tanh(logits / c); unchanged when off.
  Var SoftCap(const Var& logits) const;
  // The sink logit of each of the `heads` query heads of an Attend call:
  // the learned parameter (H), a constant 0 (off-by-one; any head count), or
  // undefined (no sink).
  // REQUIRES: heads == model.num_heads for a learned sink.
  Var SinkLogits(int64_t heads) const;
  // Masked logits (B, H, T, S) -> weights (B, H, T, S): the softmax over the
  // S keys and the sink, the sink's own weight dropped (rows sum to <= 1; a
  // row that sees no key is all zero). Plain softmax without a sink.
  Var Softmax(const Var& masked_logits) const;
  // Attention output (B, H, T, hs_v) times sigmoid(x W_g + b_g) per head
  // (HEADWISE) or per head dim (ELEMENTWISE), x (B, T, C) the sublayer's
  // input; unchanged when the gate is off.
  // REQUIRES: hs_v == hs for ELEMENTWISE.
  Var GateOutput(const Var& heads_out, const Var& x) const;

 private:
  Var Normalize(const Var& x, const Var& scale) const;

  AttentionOptions options_;
  int64_t heads_;
  Var q_norm_, k_norm_;   // (hs) or undefined
  Var sink_logits_;       // (H), learned or constant zeros, or undefined
  nn::Linear* gate_ = nullptr;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_ATTENTION_EXTRAS_H_
