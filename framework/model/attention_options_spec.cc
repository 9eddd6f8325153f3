#include "framework/model/attention_options_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tvlab {

void ValidateAttentionOptions(const AttentionSpec& attention, const std::string& path,
                              Problems* problems) {
  const float cap = attention.logit_softcap();
  if (!(std::isfinite(cap) && cap >= 0.0f))
    problems->Add(absl::StrCat(path, ".logit_softcap must be 0 (off) or a finite number > 0 (got ",
                               cap, "): logits become c * tanh(logit / c); Gemma 2 uses 50"));
}

AttentionOptions AttentionOptionsFromSpec(const AttentionSpec& attention) {
  AttentionOptions o;
  o.logit_softcap = attention.logit_softcap();
  switch (attention.sink()) {
    case AttentionSpec::Sink::NONE: o.sink = AttentionOptions::Sink::kNone; break;
    case AttentionSpec::Sink::OFF_BY_ONE: o.sink = AttentionOptions::Sink::kOffByOne; break;
    case AttentionSpec::Sink::LEARNED: o.sink = AttentionOptions::Sink::kLearned; break;
  }
  switch (attention.qk_norm()) {
    case AttentionSpec::QkNorm::NONE: o.qk_norm = AttentionOptions::QkNorm::kNone; break;
    case AttentionSpec::QkNorm::RMSNORM: o.qk_norm = AttentionOptions::QkNorm::kRmsNorm; break;
    case AttentionSpec::QkNorm::LAYERNORM: o.qk_norm = AttentionOptions::QkNorm::kLayerNorm; break;
  }
  switch (attention.output_gate()) {
    case AttentionSpec::OutputGate::NONE:
      o.output_gate = AttentionOptions::OutputGate::kNone;
      break;
    case AttentionSpec::OutputGate::HEADWISE:
      o.output_gate = AttentionOptions::OutputGate::kHeadwise;
      break;
    case AttentionSpec::OutputGate::ELEMENTWISE:
      o.output_gate = AttentionOptions::OutputGate::kElementwise;
      break;
  }
  return o;
}

}  // namespace tvlab
