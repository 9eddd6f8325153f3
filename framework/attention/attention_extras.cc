#include "framework/attention/attention_extras.h"

#include "framework/attention/heads.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// The normalisation's epsilon, as OLMo 2's and Qwen 3's q/k RMSNorms.
constexpr float kQkNormEps = 1e-6f;

}  // namespace

AttentionExtras::AttentionExtras(const AttentionOptions& options, const ModelDims& dims)
    : options_(options), heads_(dims.num_heads) {
  TVLAB_CHECK(options.logit_softcap >= 0.0f) << "logit_softcap " << options.logit_softcap;
  if (options.qk_norm != AttentionOptions::QkNorm::kNone) {
    q_norm_ = AddParameter("q_norm", {dims.head_dim}, Init::Ones());
    k_norm_ = AddParameter("k_norm", {dims.head_dim}, Init::Ones());
  }
  if (options.sink == AttentionOptions::Sink::kLearned)
    sink_logits_ = AddParameter("sink_logits", {dims.num_heads}, Init::Zeros());
  if (options.output_gate != AttentionOptions::OutputGate::kNone) {
    const int64_t per_head =
        options.output_gate == AttentionOptions::OutputGate::kElementwise ? dims.head_dim : 1;
    gate_ = AddChild("gate", std::make_unique<nn::Linear>(dims.d_model, dims.num_heads * per_head,
                                                          dims.bias));
  }
}

Var AttentionExtras::Normalize(const Var& x, const Var& scale) const {
  const bool subtract_mean = options_.qk_norm == AttentionOptions::QkNorm::kLayerNorm;
  return tvlab::Normalize(x, scale, Var(), kQkNormEps, subtract_mean);  // over hs, per (b, head, t)
}

Var AttentionExtras::NormalizeQuery(const Var& q) const {
  return q_norm_.defined() ? Normalize(q, q_norm_) : q;  // (B, H, T, hs)
}

Var AttentionExtras::NormalizeKey(const Var& k) const {
  return k_norm_.defined() ? Normalize(k, k_norm_) : k;  // (B, G, S, hs)
}

Var AttentionExtras::SoftCap(const Var& logits) const {
  const float c = options_.logit_softcap;
  if (c <= 0.0f) return logits;
  return Scale(Tanh(Scale(logits, 1.0f / c)), c);  // (B, H, T, S), in (-c, c)
}

Var AttentionExtras::SinkLogits(int64_t heads) const {
  switch (options_.sink) {
    case AttentionOptions::Sink::kNone: return Var();
    case AttentionOptions::Sink::kOffByOne: return Var(Tensor::Zeros({heads}));  // (H'), constant
    case AttentionOptions::Sink::kLearned:
      // Validation refuses a learned sink with a layout that attends with
      // fewer heads than model.num_heads (kAttendsWithFewerHeads).
      TVLAB_CHECK_EQ(heads, heads_);
      return sink_logits_;  // (H)
  }
  return Var();
}

Var AttentionExtras::Softmax(const Var& masked_logits) const {
  const int64_t b = masked_logits.dim(0), h = masked_logits.dim(1), t = masked_logits.dim(2),
                s = masked_logits.dim(3);
  Var sink = SinkLogits(h);
  if (!sink.defined()) return tvlab::Softmax(masked_logits);  // (B, H, T, S)
  // (B, H, T, 1) + (1, H, 1, 1) -> (B, H, T, 1): head h's sink logit in every row.
  Var column = Add(Var(Tensor::Zeros({b, h, t, 1})), Reshape(sink, {1, h, 1, 1}));
  Var weights = tvlab::Softmax(Concat({masked_logits, column}, 3));  // (B, H, T, S + 1)
  return Slice(weights, 3, 0, s);  // (B, H, T, S): the sink's weight left out
}

Var AttentionExtras::GateOutput(const Var& heads_out, const Var& x) const {
  if (gate_ == nullptr) return heads_out;
  const int64_t per_head = gate_->out() / heads_;
  TVLAB_CHECK(per_head == 1 || per_head == heads_out.dim(3))
      << "an elementwise gate of " << per_head << " per head for values of " << heads_out.dim(3);
  Var gate = SplitHeads(Sigmoid(gate_->Forward(x)), heads_);  // (B, T, H * k) -> (B, H, T, k)
  return Mul(heads_out, gate);  // (B, H, T, hs_v) * (B, H, T, 1 or hs_v)
}

}  // namespace tvlab
