#include "framework/interfaces/task.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/core/check.h"

namespace tvlab {

absl::Status CheckEvalWindows(const EvalWindows& w) {
  if (w.targets >= 1 && w.targets <= w.length && w.length <= w.end_length) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "eval.context_targets: windows of ", w.length, " tokens ending where those of ", w.end_length,
      " end, scoring their last ", w.targets, " targets, need 1 <= targets <= length <= end length; set "
      "eval.context_targets between 1 and the shortest entry of eval.context_lengths"));
}

void IgnoreUnscoredTargets(const EvalWindows& w, Batch* batch) {
  const int64_t unscored = w.length - w.targets;
  for (int64_t r = 0; r < batch->batch; ++r)
    for (int64_t t = 0; t < unscored; ++t) batch->targets[r * batch->length + t] = kIgnoreTarget;  // (B, T)
}

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
