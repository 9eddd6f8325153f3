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

bool TaskFitsFamily(TaskKind kind, ModelSpec::Family family) {
  switch (kind) {
    case TaskKind::kTagging:
    case TaskKind::kClassification:
      return family == ModelSpec::ENCODER_ONLY;
    case TaskKind::kSequencePair:
      return family == ModelSpec::DECODER_ONLY || family == ModelSpec::ENCODER_DECODER;
    case TaskKind::kLanguageModel:
      return family == ModelSpec::DECODER_ONLY;
  }
  return false;
}

std::string FamiliesFor(TaskKind kind) {
  switch (kind) {
    case TaskKind::kTagging:
    case TaskKind::kClassification:
      return "ENCODER_ONLY";
    case TaskKind::kSequencePair:
      return "DECODER_ONLY or ENCODER_DECODER";
    case TaskKind::kLanguageModel:
      return "DECODER_ONLY";
  }
  return "";
}

}  // namespace tvlab
