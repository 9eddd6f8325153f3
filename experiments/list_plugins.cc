#include "experiments/list_plugins.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {

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
  // Which plugins the fused attention kernel serves (runtime.attention): a
  // score or position that declares `bit`, a layout that does not declare
  // kNeverFusesLayout.
  auto fusable = [](const char* kind_id, uint32_t bit, bool declared_fuses = true) {
    const PluginKind& kind = PluginKindById(kind_id);
    std::vector<std::string> fused, unfused;
    for (const std::string& name : kind.names())
      (((kind.capabilities(name) & bit) != 0) == declared_fuses ? fused : unfused).push_back(name);
    return absl::StrCat(kind.display, "s ", absl::StrJoin(fused, ", "),
                        unfused.empty() ? "" : absl::StrCat(" (not ", absl::StrJoin(unfused, ", "), ")"));
  };
  std::vector<std::string> backends;
  for (const std::string& name : UsableBackends())
    if ((*FindBackend(name))->Implements(Kernel::kFusedAttention)) backends.push_back(name);
  out << "fused attention (runtime.attention auto|fused|unfused): "
      << fusable("attention_score", kFusableScore) << "; " << fusable("position", kFusablePosition) << "; "
      << fusable("attention_layout", kNeverFusesLayout, /*declared_fuses=*/false) << "; backends "
      << absl::StrJoin(backends, ", ") << "; a combination (per layer) fuses when its score, position and "
      << "layout all do, and \"fused\" is refused otherwise\n";
}

}  // namespace tvlab
