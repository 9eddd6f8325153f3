#include "framework/model/fused_request.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {

void CheckFusedRequest(const Experiment& spec, Problems* p) {
  if (spec.runtime().attention() != "fused") return;
  struct Rule {
    const char* kind_id;
    uint32_t bit;
    bool fuses_when_set;  // scores and positions declare fusing; layouts declare not fusing
    const char* why;
  };
  const Rule rules[] = {
      {"attention_score", kFusableScore, true,
       "has no fused kernel: the kernel computes (scaled) dot-product scores only"},
      {"position", kFusablePosition, true,
       "adds a logit bias the fused kernel cannot compute (it takes no bias, or ALiBi's slopes)"},
      {"attention_layout", kNeverFusesLayout, false,
       "declares that it never runs the fused kernel (its attention is not one fused dot product)"},
  };
  for (const Rule& rule : rules) {
    const PluginKind& kind = PluginKindById(rule.kind_id);
    const std::string name = PluginNameIn(spec, kind);
    const std::vector<std::string> names = kind.names();
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;  // reported elsewhere
    const bool declared = (kind.capabilities(name) & rule.bit) != 0;
    if (declared == rule.fuses_when_set) continue;
    p->Add(absl::StrCat("runtime.attention is \"fused\", but ", kind.name_path(), " '", name, "' ", rule.why,
                        ", so its attention would silently run unfused; set runtime.attention to \"auto\" "
                        "(fused wherever it can) or \"unfused\", or choose a ", kind.display,
                        " that fuses (--list_plugins)"));
  }
}

}  // namespace tvlab
