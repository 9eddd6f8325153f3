#ifndef TVLAB_FRAMEWORK_TRAIN_CONTEXT_EVALS_H_
#define TVLAB_FRAMEWORK_TRAIN_CONTEXT_EVALS_H_

// "Train short, test long" in one run: the trained model evaluated once per
// entry of eval.context_lengths, each on the task's held-out windows of that
// many tokens (the run's task EvaluatedAt that length: its data shared,
// nothing read again; as many windows as the held-out text holds, at most
// eval.examples), recorded as RunMetrics.context_evals. The run's own
// eval_loss stays at eval.context_length (the training context when 0).
// With eval.context_targets = N > 0 every length scores the same N targets
// of the same windows instead (Task::EvaluatedOnSameTargets, EvalWindows):
// the windows of the longest entry's ends, as many as the held-out data
// holds at that length (at most eval.examples), L tokens each at length L,
// their last N targets scored; ContextEval.scored_tokens records the count.

#include "absl/status/status.h"
#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

// Appends one ContextEval per eval.context_lengths entry, in order, to
// `metrics`. Requires: the spec passed ValidateExperiment (which validates
// every length against the task and the position plugin); `model_spec` is
// the model's. On failure (the task cannot evaluate at a length, or that
// evaluation fails) the error names the entry and its length, and
// `metrics` holds the entries before it only.
absl::Status EvaluateAtContexts(const Model& model, const Task& task, const EvalSpec& eval,
                                const ModelSpec& model_spec, RunMetrics* metrics);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_CONTEXT_EVALS_H_
