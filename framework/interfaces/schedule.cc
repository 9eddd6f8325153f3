#include "framework/interfaces/schedule.h"

namespace tvlab {

Registry<ScheduleEntry>& ScheduleRegistry() {
  static auto* registry = new Registry<ScheduleEntry>("schedule", "plugins/schedule");
  return *registry;
}

}  // namespace tvlab
