#include "experiments/list_plugins.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {
namespace {

// The attention options every layout honours (model.attention fields 6..9,
// framework/attention/attention_extras.h), their values read from the
// schema: "logit_softcap (float, 0 = off), sink NONE|OFF_BY_ONE|LEARNED, ...".
std::string AttentionOptionsLine() {
  const google::protobuf::Descriptor* d = AttentionSpec::descriptor();
  std::vector<std::string> options;
  for (const char* field : {"logit_softcap", "sink", "qk_norm", "output_gate"}) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(field);
    if (f->enum_type() == nullptr) {
      options.push_back(absl::StrCat(field, " (float, 0 = off)"));
      continue;
    }
    std::vector<std::string> values;
    for (int i = 0; i < f->enum_type()->value_count(); ++i)
      values.push_back(f->enum_type()->value(i)->name());
    options.push_back(absl::StrCat(field, " ", absl::StrJoin(values, "|")));
  }
  return absl::StrCat("attention options (model.attention, every layout, all fuse: soft-cap and "
                      "sink inside the fused kernel): ",
                      absl::StrJoin(options, ", "));
}

}  // namespace

// One line per kind of the kind table (with its spec field and default),
// then the backends.
void ListPlugins(std::ostream& out) {
  for (const PluginKind& kind : PluginKinds()) {
    out << kind.display << " (" << kind.name_path();
    if (!kind.default_plugin.empty()) out << ", default " << kind.default_plugin;
    out << "): " << absl::StrJoin(kind.names(), ", ") << "\n";
  }
  out << "backend (runtime.backend): " << absl::StrJoin(RegisteredBackends(), ", ") << "\n";
  // The GEMM precisions each usable backend runs (runtime.precision), from
  // the descriptors: no backend is constructed.
  std::vector<std::string> precisions;
  for (const std::string& name : UsableBackends())
    precisions.push_back(
        absl::StrCat(name, " ", absl::StrJoin((*FindBackend(name))->PrecisionNames(), "|")));
  out << "precision (runtime.precision, default fp32): " << absl::StrJoin(precisions, "; ")
      << "\n";
  // Which plugins the fused attention kernel serves (runtime.attention).
  auto fusable = [](const char* kind_id, uint32_t bit) {
    const PluginKind& kind = PluginKindById(kind_id);
    std::vector<std::string> fused, unfused;
    for (const std::string& name : kind.names())
      ((kind.capabilities(name) & bit) ? fused : unfused).push_back(name);
    return absl::StrCat(kind.display, "s ", absl::StrJoin(fused, ", "),
                        unfused.empty() ? "" : absl::StrCat(" (not ", absl::StrJoin(unfused, ", "), ")"));
  };
  std::vector<std::string> backends;
  for (const std::string& name : UsableBackends())
    if ((*FindBackend(name))->Implements(Kernel::kFusedAttention)) backends.push_back(name);
  out << "fused attention (runtime.attention auto|fused|unfused): "
      << fusable("attention_score", kFusableScore) << "; " << fusable("position", kFusablePosition)
      << "; backends " << absl::StrJoin(backends, ", ") << "\n";
  out << "attention window (model.attention.window, default 0 = full attention): W > 0 lets "
         "each self-attention query see W keys (causal: itself and W - 1 before it); every "
         "score, layout and position; fuses wherever the score and position do; the KV cache "
         "holds at most W tokens\n";
  out << AttentionOptionsLine() << "\n";
}

}  // namespace tvlab
