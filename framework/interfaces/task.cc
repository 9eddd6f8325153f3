#include "framework/interfaces/task.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "framework/core/check.h"

namespace tvlab {

Registry<TaskEntry>& TaskRegistry() {
  static auto* registry = new Registry<TaskEntry>("task", "plugins/task");
  return *registry;
}

const std::vector<TaskKindRow>& TaskKindRows() {
  static const auto* rows = new std::vector<TaskKindRow>{
      // kind, name, families, labels sequences, evaluations
      {TaskKind::kTagging, "tagging", {ModelSpec::ENCODER_ONLY}, false, 0},
      {TaskKind::kClassification, "classification", {ModelSpec::ENCODER_ONLY}, true, kEvaluateAccuracy},
      {TaskKind::kSequencePair,
       "sequence pair",
       {ModelSpec::DECODER_ONLY, ModelSpec::ENCODER_DECODER},
       false,
       kEvaluateGeneration},
      {TaskKind::kLanguageModel, "language model", {ModelSpec::DECODER_ONLY}, false, kEvaluatePerplexity},
      {TaskKind::kCausalTagging, "causal tagging", {ModelSpec::DECODER_ONLY}, false, 0},
  };
  return *rows;
}

const TaskKindRow& TaskKindRowOf(TaskKind kind) {
  for (const TaskKindRow& row : TaskKindRows())
    if (row.kind == kind) return row;
  TVLAB_CHECK(false) << "task kind " << static_cast<int>(kind) << " has no row in TaskKindRows()";
  return TaskKindRows().front();
}

int64_t HeadOutputs(const Task& task) { return task.head_outputs(); }

bool TaskFitsFamily(TaskKind kind, ModelSpec::Family family) {
  const std::vector<ModelSpec::Family>& fits = TaskKindRowOf(kind).families;
  return std::find(fits.begin(), fits.end(), family) != fits.end();
}

std::string FamiliesFor(TaskKind kind) {
  return absl::StrJoin(TaskKindRowOf(kind).families, " or ", [](std::string* out, ModelSpec::Family f) {
    out->append(ModelSpec::Family_Name(f));
  });
}

std::string TaskKindName(TaskKind kind) { return TaskKindRowOf(kind).name; }

}  // namespace tvlab
