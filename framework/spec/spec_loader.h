#ifndef TVLAB_FRAMEWORK_SPEC_SPEC_LOADER_H_
#define TVLAB_FRAMEWORK_SPEC_SPEC_LOADER_H_

// From a text-format spec file plus --set overrides to a resolved, validated
// Experiment. Every error names where it is (file:line:col for syntax, the
// field path for values), what is wrong and how to fix it.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/interfaces/model_dims.h"
#include "framework/spec/experiment.pb.h"

namespace tvlab {

// Parses text format. Errors read "<filename>:<line>:<col>: <what>".
absl::StatusOr<Experiment> ParseSpecText(const std::string& text, const std::string& filename);
// Reads and parses a file; an unreadable file is an error naming the path.
absl::StatusOr<Experiment> ParseSpecFile(const std::string& path);

// Applies "field.path=value" (e.g. "model.attention.layout=gqa",
// "model.attention.layout_options.num_kv_heads=2"). Changing a plugin name
// clears options that belonged to the previous plugin.
absl::Status ApplyOverride(Experiment* spec, const std::string& assignment);

// Writes every default explicitly: scalars, the default optimizer, and each
// plugin's options message. Idempotent.
void ResolveDefaults(Experiment* spec);

// Checks the whole spec, every plugin's options included, before anything is
// built. Returns all problems at once, one per line.
absl::Status ValidateExperiment(const Experiment& spec);

// The sizes plugins are built and validated against.
ModelDims ModelDimsFromSpec(const Experiment& spec);

// Parse, apply overrides, resolve defaults, validate. `name` defaults to the
// file's stem.
absl::StatusOr<Experiment> LoadExperiment(const std::string& path,
                                          const std::vector<std::string>& overrides);

// LoadExperiment for a spec already parsed (a grid's base, possibly inline):
// applies `overrides`, names it `default_name` if unnamed, resolves and
// validates. Validation errors start with "<source>: invalid spec:".
absl::StatusOr<Experiment> ResolveExperiment(Experiment spec,
                                             const std::vector<std::string>& overrides,
                                             const std::string& source,
                                             const std::string& default_name);

// Resolves relative `path` fields under `task` against the directory of
// `spec_path` (LoadExperiment does this; grid loaders call it for bases).
void ResolveTaskPaths(Experiment* spec, const std::string& spec_path);

// Text format of a resolved spec, as written to spec.resolved.pbtxt.
std::string SpecToText(const Experiment& spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_SPEC_LOADER_H_
