#include "framework/spec/spec_loader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "framework/backend/backend_registry.h"
#include "framework/backend/runtime_spec.h"
#include "framework/core/problems.h"
#include "framework/core/status_macros.h"
#include "framework/data/load_task.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/limits/memory_estimate.h"
#include "framework/limits/size_limits.h"
#include "framework/model/model_spec.h"
#include "framework/spec/text_format_errors.h"
#include "framework/train/train_spec.h"

namespace tvlab {
namespace {

// A spec in the syntax before tasks were plugins names the task as a field
// of `task` (task { sort_digits { ... } }): say how to write it now.
absl::Status WithTaskSyntaxHint(const absl::Status& parse_error) {
  const std::string message(parse_error.message());
  const std::string marker = "Message type \"tvlab.TaskSpec\" has no field named \"";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return parse_error;
  const size_t start = at + marker.size();
  const std::string name = message.substr(start, message.find('"', start) - start);
  auto prototype = PluginKindById("task").prototype(name);
  if (!prototype.ok()) return parse_error;
  return absl::InvalidArgumentError(absl::StrCat(
      message, "\n  tasks are plugins now: rewrite task { ", name, " { ... } } as\n    task { plugin: \"",
      name, "\" options { [type.googleapis.com/", (*prototype)->GetDescriptor()->full_name(),
      "] { ... } } }\n  (same fields inside; see plugins/task/", name, "/example.pbtxt)"));
}

}  // namespace

absl::StatusOr<Experiment> ParseSpecText(const std::string& text, const std::string& filename) {
  Experiment spec;
  absl::Status parsed = ParseTextProto(text, filename, &spec);
  if (!parsed.ok()) return WithTaskSyntaxHint(parsed);
  return spec;
}

absl::StatusOr<Experiment> ParseSpecFile(const std::string& path) {
  std::string text;
  TVLAB_RETURN_IF_ERROR(ReadTextFile(path, "spec file", &text));
  return ParseSpecText(text, path);
}

namespace {

// eval.context_targets: the task scores the same targets at every entry of
// eval.context_lengths. What the task cannot evaluate at all is said above
// (per entry), and the numbers alone by ValidateEvalSpec.
void ValidateSameTargets(const Experiment& spec, const Task& task, Problems* p) {
  const EvalSpec& eval = spec.eval();
  const int32_t n = eval.context_targets();
  if (n <= 0 || eval.context_lengths_size() == 0) return;
  int64_t longest = 0;
  for (int32_t length : eval.context_lengths()) longest = std::max<int64_t>(longest, length);
  auto at_longest = task.EvaluatedAt(longest);
  for (int i = 0; i < eval.context_lengths_size(); ++i) {
    const int32_t length = eval.context_lengths(i);
    if (length < 2 || n > length) continue;  // ValidateEvalSpec says so
    auto same = task.EvaluatedOnSameTargets(EvalWindows{length, longest, n});
    if (same.ok() && *same == nullptr) {
      p->Add(absl::StrCat("eval.context_targets (", n, "): task '", spec.task().plugin(),
                          "' cannot score the same targets at several contexts; remove eval.context_targets "
                          "(language-model tasks such as text_lm and token_store support it)"));
      return;
    }
    // A longest entry the held-out data cannot hold is said for that entry.
    if (!same.ok() && at_longest.ok())
      p->Add(absl::StrCat("eval.context_targets (", n, ") at eval.context_lengths[", i, "] (", length,
                          "): task (", spec.task().plugin(), "): ", same.status().message()));
  }
}

// eval.context_lengths (each one the task evaluated at that length, as
// eval.context_length would be) and eval.decode_speed_tokens (a model that
// generates, within its positions).
void ValidateExtraEvaluations(const Experiment& spec, const Task& task, Problems* p) {
  const EvalSpec& eval = spec.eval();
  for (int i = 0; i < eval.context_lengths_size(); ++i) {
    const int32_t length = eval.context_lengths(i);
    const std::string field = absl::StrCat("eval.context_lengths[", i, "]");
    if (length < 2) continue;  // ValidateEvalSpec says so
    auto at = task.EvaluatedAt(length);  // as many windows as fit: EvaluateAtContexts
    if (!at.ok()) {
      // The task's message is about eval.context_length, which here is this entry.
      p->Add(absl::StrCat(field, " (", length, "): task (", spec.task().plugin(), "): ",
                          absl::StrReplaceAll(at.status().message(), {{"eval.context_length", field}})));
      continue;
    }
    const int64_t eval_length = *at != nullptr ? (*at)->eval_length() : task.eval_length();
    ValidateEvalContextAt(spec, field, length, task.max_length(), eval_length, p);
  }
  ValidateSameTargets(spec, task, p);
  if (eval.decode_speed_tokens() > 0) {
    const ModelSpec::Family family = spec.model().family();
    if (family != ModelSpec::DECODER_ONLY && family != ModelSpec::ENCODER_DECODER) {
      p->Add(absl::StrCat("eval.decode_speed_tokens (", eval.decode_speed_tokens(), "): model.family ",
                          ModelSpec::Family_Name(family),
                          " does not generate; set it to 0, or use a DECODER_ONLY or ENCODER_DECODER model"));
    }
    const int64_t positions = spec.model().max_seq_len() > 0 ? spec.model().max_seq_len() : task.max_length();
    if (positions > 0 && eval.decode_speed_tokens() > positions) {
      p->Add(absl::StrCat("eval.decode_speed_tokens (", eval.decode_speed_tokens(),
                          ") is more than the model's positions (model.max_seq_len, or the task's length when 0: ",
                          positions, "); set it to at most ", positions));
    }
  }
}

// train.step_profile times operations on the host clock: only where the
// backend's kernels have finished when they return (not on a GPU).
void ValidateStepProfileDevice(const Experiment& spec, Problems* p) {
  if (!spec.train().step_profile()) return;
  const absl::StatusOr<const BackendDescriptor*> backend = FindBackend(spec.runtime().backend());
  if (!backend.ok() || (*backend)->device != Device::kCuda) return;  // an unknown name is ValidateRuntimeSpec's
  p->Add(absl::StrCat("train.step_profile times each operation on the host clock, but runtime.backend '",
                      spec.runtime().backend(),
                      "' runs its kernels asynchronously on a GPU; profile it with Nsight Systems (nsys profile) "
                      "instead, or remove train.step_profile"));
}

}  // namespace

absl::Status ValidateExperiment(const Experiment& spec, std::shared_ptr<const Task>* built) {
  Problems p;
  if (spec.name().empty()) p.Add("name must not be empty; e.g. name: \"sort_digits\"");
  // The name becomes a directory (runs/<name>/...): no path separators, no
  // "." or "..".
  if (!spec.name().empty() &&
      (spec.name() == "." || spec.name() == ".." ||
       spec.name().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
           std::string::npos))
    p.Add(absl::StrCat("name '", spec.name(),
                       "' must be letters, digits, '.', '_' and '-' only (it names the run "
                       "directory runs/<name>/); e.g. name: \"sort_digits_rope\""));
  auto task = LoadTask(spec);
  p.Add(task.status());
  ValidateModelSpec(spec, task.ok() ? (*task)->max_length() : 0, &p);
  if (task.ok()) ValidateEvalContext(spec, (*task)->max_length(), (*task)->eval_length(), &p);
  if (task.ok()) ValidateExtraEvaluations(spec, **task, &p);
  if (task.ok()) ValidateTiedEmbeddings(spec, (*task)->vocab_size(), HeadOutputs(**task), &p);
  ValidateTrainSpec(spec.train(), &p);
  ValidateEvalSpec(spec.eval(), &p);
  ValidateRuntimeSpec(spec.runtime(), &p);
  ValidateStepProfileDevice(spec, &p);
  // Upper bounds and the memory estimate.
  p.Add(CheckSizeLimits(spec, task.ok() ? std::optional<TaskSizes>(SizesOf(**task)) : std::nullopt));
  absl::Status valid = p.ToStatus();
  if (valid.ok() && built != nullptr) *built = *task;
  return valid;
}

absl::StatusOr<Experiment> ResolveExperiment(Experiment spec,
                                             const std::vector<std::string>& overrides,
                                             const std::string& source,
                                             const std::string& default_name,
                                             std::shared_ptr<const Task>* built) {
  for (const std::string& o : overrides) TVLAB_RETURN_IF_ERROR(ApplyOverride(&spec, o));
  if (spec.name().empty()) spec.set_name(default_name);
  ResolveDefaults(&spec);
  std::shared_ptr<const Task> task;
  absl::Status valid = ValidateExperiment(spec, &task);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": invalid spec:\n  ", absl::StrJoin(absl::StrSplit(valid.message(), '\n'), "\n  ")));
  }
  // Record the sequence length the model is built for.
  if (spec.model().max_seq_len() == 0) spec.mutable_model()->set_max_seq_len(static_cast<int32_t>(task->max_length()));
  ResolveAutomaticSizes(&spec);
  if (built != nullptr) *built = std::move(task);
  return spec;
}

absl::StatusOr<Experiment> LoadExperiment(const std::string& path,
                                          const std::vector<std::string>& overrides,
                                          std::shared_ptr<const Task>* built) {
  TVLAB_ASSIGN_OR_RETURN(Experiment spec, ParseSpecFile(path));
  ResolveTaskPaths(&spec, path);
  const std::string stem = path.substr(path.find_last_of('/') + 1);
  return ResolveExperiment(std::move(spec), overrides, path, stem.substr(0, stem.find('.')), built);
}

}  // namespace tvlab
