#ifndef TVLAB_FRAMEWORK_DATA_LOAD_TASK_H_
#define TVLAB_FRAMEWORK_DATA_LOAD_TASK_H_

// From a spec's `task { plugin options }` to a built Task. Every call builds
// the task and reads its files; a run calls it once, in validation
// (LoadExperiment, framework/spec/spec_loader.h), and hands that task to
// the trainer, evaluation and tools. Tasks are immutable after
// construction, so sharing one is safe.

#include <memory>

#include "absl/status/statusor.h"
#include "framework/core/problems.h"
#include "framework/interfaces/task.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// On success, the task `spec` names, evaluated at eval.context_length when
// that is set and the task can (Task::EvaluatedAt). On failure, every
// problem with the task part of the spec: no or an unknown plugin, a task that does not fit
// model.family (or a classifier without model.pooling), bad options, an
// unreadable or malformed data file, eval.examples (or, for sequence pairs,
// eval.decode_examples) larger than the held-out examples the task holds.
// Messages name the field path.
absl::StatusOr<std::shared_ptr<const Task>> LoadTask(const Experiment& spec);

// Sets the task options' `tokenizer.model_path` (a TokenizerOptions field
// named "tokenizer", tokenizer.proto) to `model_path`; false, changing
// nothing, when the task's options have no such field. A run records its
// tokenizer.model this way in spec.resolved.pbtxt.
bool PointTokenizerAt(Experiment* spec, const std::string& model_path);

// Task options' string fields named "path" or "*_path" are files; a relative one is
// resolved against the directory of `spec_path` (the spec file naming it),
// so a resolved spec works from anywhere. Options of an unknown task are
// left alone (validation reports them).
void ResolveTaskPaths(Experiment* spec, const std::string& spec_path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_LOAD_TASK_H_
