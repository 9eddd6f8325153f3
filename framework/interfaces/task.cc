#include "framework/interfaces/task.h"

namespace tvlab {

Registry<TaskEntry>& TaskRegistry() {
  static auto* registry = new Registry<TaskEntry>("task", "plugins/task");
  return *registry;
}

int64_t HeadOutputs(const Task& task) {
  if (task.kind() == TaskKind::kClassification)
    return static_cast<const ClassificationTask&>(task).num_classes();
  return task.vocab_size();
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

std::string TaskKindName(TaskKind kind) {
  switch (kind) {
    case TaskKind::kTagging:
      return "tagging";
    case TaskKind::kClassification:
      return "classification";
    case TaskKind::kSequencePair:
      return "sequence pair";
    case TaskKind::kLanguageModel:
      return "language model";
  }
  return "";
}

}  // namespace tvlab
