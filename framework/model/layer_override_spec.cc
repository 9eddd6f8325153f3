#include "framework/model/layer_override_spec.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/model_spec.h"
#include "framework/schema/layer_overrides.h"

namespace tvlab {
namespace {

std::string OverridePath(int i) { return absl::StrCat("model.layer_overrides[", i, "]"); }

// Whether override `o` names at least one layer of the model.
bool NamesSomeLayer(const ModelSpec& m, const LayerOverride& o) {
  for (StackRole stack : StacksOf(m))
    for (int64_t layer = 0; layer < LayersOf(m, stack); ++layer)
      if (OverrideApplies(o, stack, layer, LayersOf(m, stack))) return true;
  return false;
}

// Which layers: `layers` or `pattern` + `letter`, in range; the stack exists.
void CheckSelection(const ModelSpec& m, int i, Problems* p) {
  const LayerOverride& o = m.layer_overrides(i);
  const std::string path = OverridePath(i);
  if (o.stack() != LayerOverride::ALL_STACKS && m.family() != ModelSpec::ENCODER_DECODER)
    p->Add(absl::StrCat(path, ".stack (", LayerOverride::Stack_Name(o.stack()),
                        ") is for ENCODER_DECODER models; remove it (this model has one stack)"));
  if ((o.layers_size() > 0) == o.has_pattern()) {
    p->Add(absl::StrCat(path, ": give either layers (e.g. layers: [0, 5]) or pattern and letter "
                              "(e.g. pattern: \"SSSL\" letter: \"S\"), not ", o.has_pattern() ? "both" : "neither"));
    return;
  }
  for (int j = 0; j < o.layers_size(); ++j) {
    for (StackRole stack : StacksOf(m)) {
      if ((o.stack() == LayerOverride::ENCODER && stack != StackRole::kEncoder) ||
          (o.stack() == LayerOverride::DECODER && stack != StackRole::kDecoder))
        continue;
      const int64_t n = LayersOf(m, stack);
      if (o.layers(j) >= n || o.layers(j) < -n)
        p->Add(absl::StrCat(path, ".layers[", j, "] (", o.layers(j), ") is not a layer of the ", StackName(stack),
                            " (", n, " layers: 0..", n - 1, ", or -", n, "..-1 from the end)"));
    }
  }
  if (o.has_pattern()) {
    if (o.pattern().empty())
      p->Add(absl::StrCat(path, ".pattern is empty; one letter per layer, e.g. \"SSSL\""));
    else if (o.letter().size() != 1 || o.pattern().find(o.letter()) == std::string::npos)
      p->Add(absl::StrCat(path, ".letter ('", o.letter(), "') must be one letter of pattern \"", o.pattern(),
                          "\": the override applies to the layers with that letter"));
  }
  if (p->empty() && !NamesSomeLayer(m, o))
    p->Add(absl::StrCat(path, " names no layer of this model; remove it or fix its layers"));
}

// A per-layer position acts inside attention only (the embeddings' part is
// the model's): one that acts on the embeddings alone would silently do
// nothing there.
void CheckPosition(const ModelSpec& m, int i, Problems* p) {
  const LayerOverride& o = m.layer_overrides(i);
  if (!o.position().has_plugin() || o.position().plugin() == "none") return;
  const PluginKind& kind = PluginKindById("position");
  const std::vector<std::string> names = kind.names();
  if (std::find(names.begin(), names.end(), o.position().plugin()) == names.end()) return;  // reported per layer
  if (kind.capabilities(o.position().plugin()) & (kRotatesQueriesAndKeys | kAddsLogitBias)) return;
  p->Add(absl::StrCat(OverridePath(i), ".position.plugin: '", o.position().plugin(),
                      "' acts on the token embeddings, which are the model's (model.position), not a "
                      "layer's; a layer's position acts inside attention (e.g. rope, alibi, or none for "
                      "a layer without positions)"));
}

// `message` (about the layer's spec) rewritten to name the override that set
// the field it is about, and the layer.
std::string AboutLayer(const ModelSpec& m, const std::vector<int>& applied, StackRole stack, int64_t layer,
                       const std::string& message) {
  const std::string where = LayerName(stack, layer);
  for (const char* part : {"attention", "position", "norm", "ffn"}) {
    const std::string field = absl::StrCat("model.", part, ".");
    const size_t at = message.find(field);
    if (at == std::string::npos) continue;
    for (auto it = applied.rbegin(); it != applied.rend(); ++it) {
      const LayerOverride& o = m.layer_overrides(*it);
      const bool sets = (part[0] == 'a' && o.has_attention()) || (part[0] == 'p' && o.has_position()) ||
                        (part[0] == 'n' && o.has_norm()) || (part[0] == 'f' && o.has_ffn());
      if (!sets) continue;
      std::string out = message;
      out.replace(at, field.size(), absl::StrCat(OverridePath(*it), ".", part, "."));
      return absl::StrCat(out, " (in ", where, ")");
    }
  }
  std::vector<std::string> paths;
  for (int i : applied) paths.push_back(OverridePath(i));
  return absl::StrCat(where, " (", absl::StrJoin(paths, ", "), "): ", message);
}

}  // namespace

void ValidateLayerOverrides(const Experiment& spec, const ModelDims& dims, Problems* p) {
  const ModelSpec& m = spec.model();
  if (m.layer_overrides_size() == 0) return;
  Problems own;
  for (int i = 0; i < m.layer_overrides_size(); ++i) {
    Problems selection;
    CheckSelection(m, i, &selection);
    for (const std::string& problem : selection.list()) own.Add(problem);
    CheckPosition(m, i, &own);
  }
  for (const std::string& problem : own.list()) p->Add(problem);
  if (!own.empty()) return;
  // The model's own combination was validated already: its problems are
  // not repeated per layer.
  Problems model_problems;
  ValidateModelPlugins(spec, dims, &model_problems);
  const std::set<std::string> known(model_problems.list().begin(), model_problems.list().end());
  std::set<std::string> seen_layers, reported;
  for (StackRole stack : StacksOf(m)) {
    for (int64_t layer = 0; layer < LayersOf(m, stack); ++layer) {
      const std::vector<int> applied = OverridesOf(m, stack, layer);
      if (applied.empty()) continue;
      const Experiment layer_spec = LayerExperiment(spec, stack, layer);
      if (!seen_layers.insert(layer_spec.model().SerializeAsString()).second) continue;
      Problems found;
      ValidateModelPlugins(layer_spec, dims, &found);
      for (const std::string& problem : found.list()) {
        if (known.count(problem)) continue;
        const std::string message = AboutLayer(m, applied, stack, layer, problem);
        if (reported.insert(message).second) p->Add(message);
      }
    }
  }
}

}  // namespace tvlab
