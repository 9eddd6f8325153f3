#include "framework/interfaces/init.h"

namespace tvlab {

Registry<InitEntry>& InitRegistry() {
  static auto* registry = new Registry<InitEntry>("init", "plugins/init");
  return *registry;
}

}  // namespace tvlab
