#include "experiments/list_plugins.h"

#include <string>

#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"
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
}

}  // namespace tvlab
