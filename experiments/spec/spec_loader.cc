#include "experiments/spec/spec_loader.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/spec/text_format_errors.h"
#include "framework/backend/runtime_spec.h"
#include "framework/core/problems.h"
#include "framework/core/status_macros.h"
#include "framework/data/load_task.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/limits/size_limits.h"
#include "framework/model/model_spec.h"
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

absl::Status ValidateExperiment(const Experiment& spec) {
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
  ValidateTrainSpec(spec.train(), &p);
  ValidateEvalSpec(spec.eval(), &p);
  ValidateRuntimeSpec(spec.runtime(), &p);
  p.Add(CheckSizeLimits(spec));  // upper bounds and the memory estimate
  return p.ToStatus();
}

absl::StatusOr<Experiment> ResolveExperiment(Experiment spec,
                                             const std::vector<std::string>& overrides,
                                             const std::string& source,
                                             const std::string& default_name) {
  for (const std::string& o : overrides) TVLAB_RETURN_IF_ERROR(ApplyOverride(&spec, o));
  if (spec.name().empty()) spec.set_name(default_name);
  ResolveDefaults(&spec);
  absl::Status valid = ValidateExperiment(spec);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": invalid spec:\n  ", absl::StrJoin(absl::StrSplit(valid.message(), '\n'), "\n  ")));
  }
  // Record the sequence length the model is built for (the task is cached:
  // this does not read its files again).
  if (spec.model().max_seq_len() == 0) {
    TVLAB_ASSIGN_OR_RETURN(std::shared_ptr<const Task> task, LoadTask(spec));
    spec.mutable_model()->set_max_seq_len(static_cast<int32_t>(task->max_length()));
  }
  ResolveAutomaticSizes(&spec);
  return spec;
}

absl::StatusOr<Experiment> LoadExperiment(const std::string& path,
                                          const std::vector<std::string>& overrides) {
  TVLAB_ASSIGN_OR_RETURN(Experiment spec, ParseSpecFile(path));
  ResolveTaskPaths(&spec, path);
  const std::string stem = path.substr(path.find_last_of('/') + 1);
  return ResolveExperiment(std::move(spec), overrides, path, stem.substr(0, stem.find('.')));
}

}  // namespace tvlab
