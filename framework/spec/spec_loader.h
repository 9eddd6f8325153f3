#ifndef TVLAB_FRAMEWORK_SPEC_SPEC_LOADER_H_
#define TVLAB_FRAMEWORK_SPEC_SPEC_LOADER_H_

// From a text-format spec file plus --set overrides to a resolved, validated
// Experiment: parse (spec_loader), --set (spec_overrides), defaults
// (spec_defaults), then every subsystem validates its own part (model,
// train, eval/decoding, runtime, task). Every error names where it is
// (file:line:col for syntax, the field path for values), what is wrong and
// how to fix it.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/interfaces/task.h"
#include "framework/schema/experiment.pb.h"
#include "framework/schema/spec_text.h"
#include "framework/spec/spec_defaults.h"
#include "framework/spec/spec_overrides.h"

namespace tvlab {

// Parses text format. Errors read "<filename>:<line>:<col>: <what>"; a spec
// written for tvlab's older task syntax (task { sort_digits { ... } }) gets
// the rewrite to the task plugin syntax.
absl::StatusOr<Experiment> ParseSpecText(const std::string& text, const std::string& filename);
// Reads and parses a file; an unreadable file is an error naming the path.
absl::StatusOr<Experiment> ParseSpecFile(const std::string& path);

// Checks the whole spec, every plugin's options and the task (which is
// built here, its data files read: data/load_task.h) included, before
// anything else is built. Returns all problems at once, one per line. On
// success, `*built` (when given) is the task it built.
absl::Status ValidateExperiment(const Experiment& spec, std::shared_ptr<const Task>* built = nullptr);

// Parse, resolve task paths against the file's directory, apply overrides,
// resolve defaults, validate. `name` defaults to the file's stem. On
// success, `*built` (when given) is the task validation built: a run hands
// it to RunExperiment, a tool uses it, and neither builds it again.
absl::StatusOr<Experiment> LoadExperiment(const std::string& path,
                                          const std::vector<std::string>& overrides,
                                          std::shared_ptr<const Task>* built = nullptr);

// LoadExperiment for a spec already parsed (a grid's base, possibly inline):
// applies `overrides`, names it `default_name` if unnamed, resolves and
// validates, and records the task's length as model.max_seq_len when it is
// 0. Validation errors start with "<source>: invalid spec:". On success,
// `*built` (when given) is the task validation built.
absl::StatusOr<Experiment> ResolveExperiment(Experiment spec,
                                             const std::vector<std::string>& overrides,
                                             const std::string& source,
                                             const std::string& default_name,
                                             std::shared_ptr<const Task>* built = nullptr);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_SPEC_LOADER_H_
