#include "framework/data/task.h"

namespace tvlab {

Registry<TaskEntry>& TaskRegistry() {
  static auto* registry = new Registry<TaskEntry>("task");
  return *registry;
}

std::string TaskName(const Experiment& spec) {
  const auto& task = spec.task();
  const auto* oneof = task.GetDescriptor()->FindOneofByName("task");
  const auto* field = task.GetReflection()->GetOneofFieldDescriptor(task, oneof);
  return field == nullptr ? "" : field->name();
}

}  // namespace tvlab
