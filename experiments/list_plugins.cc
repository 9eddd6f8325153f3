#include "experiments/list_plugins.h"

#include <string>

#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"
#include "framework/data/task.h"
#include "framework/spec/plugin_slots.h"

namespace tvlab {

void ListPlugins(std::ostream& out) {
  std::string last;
  for (const PluginSlot& slot : PluginSlots()) {
    if (slot.kind == last) continue;
    last = slot.kind;
    out << slot.kind << " (" << slot.parent_path << "." << slot.name_field
        << "): " << absl::StrJoin(slot.names(), ", ") << "\n";
  }
  out << "task (task.<name>): " << absl::StrJoin(TaskRegistry().Names(), ", ") << "\n";
  out << "backend (runtime.backend): " << absl::StrJoin(RegisteredBackends(), ", ") << "\n";
}

}  // namespace tvlab
