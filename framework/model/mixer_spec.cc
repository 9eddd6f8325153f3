#include "framework/model/mixer_spec.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {

void CheckRecurrentMixer(const Experiment& spec, Problems* problems) {
  const PluginKind& layouts = PluginKindById("attention_layout");
  const std::string layout = PluginNameIn(spec, layouts);
  const std::vector<std::string> names = layouts.names();
  if (std::find(names.begin(), names.end(), layout) == names.end()) return;  // reported elsewhere
  if (!(layouts.capabilities(layout) & kRecurrentMixer)) return;
  const std::string mixer = absl::StrCat("layout '", layout, "' is a recurrent mixer (docs/mixers.md)");
  const ModelSpec& m = spec.model();
  if (m.family() != ModelSpec::DECODER_ONLY)
    problems->Add(absl::StrCat("model.family is ", ModelSpec::Family_Name(m.family()), ", but ", mixer,
                               ": causal self-attention only, no encoder or cross-attention; use family: "
                               "DECODER_ONLY, or a softmax layout (mha, gqa, ...) for this model"));
  const PluginKind& scores = PluginKindById("attention_score");
  const std::string score = PluginNameIn(spec, scores);
  if (score != scores.default_plugin)
    problems->Add(absl::StrCat(scores.name_path(), " is '", score, "', but ", mixer,
                               " with its own similarity and no attention scores; remove the score (the default '",
                               scores.default_plugin, "' stands for none) or choose a softmax layout"));
  const AttentionSpec& a = m.attention();
  struct Option {
    bool set;
    const char* field;
  };
  for (const Option& o : {Option{a.window() != 0, "window"}, Option{a.logit_softcap() != 0.0f, "logit_softcap"},
                          Option{a.sink() != AttentionSpec::Sink::NONE, "sink"},
                          Option{a.qk_norm() != AttentionSpec::QkNorm::NONE, "qk_norm"},
                          Option{a.output_gate() != AttentionSpec::OutputGate::NONE, "output_gate"}}) {
    if (!o.set) continue;
    problems->Add(absl::StrCat("model.attention.", o.field, " is set, but ", mixer,
                               ", which has no softmax attention for it to act on; remove model.attention.",
                               o.field, " for the mixer's layers (a layer_overrides entry can keep it on the "
                               "softmax layers of a hybrid)"));
  }
}

}  // namespace tvlab
