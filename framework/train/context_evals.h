#ifndef TVLAB_FRAMEWORK_TRAIN_CONTEXT_EVALS_H_
#define TVLAB_FRAMEWORK_TRAIN_CONTEXT_EVALS_H_

// "Train short, test long" in one run: the trained model evaluated once per
// entry of eval.context_lengths, each on the task's held-out windows of that
// many tokens (the task loaded as for eval.context_length = that length;
// as many windows as the held-out text holds, at most eval.examples),
// recorded as RunMetrics.context_evals. The run's own eval_loss stays at
// eval.context_length (the training context when 0).

#include "absl/status/status.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

// Appends one ContextEval per eval.context_lengths entry, in order, to
// `metrics`. Requires: `spec` passed ValidateExperiment (which validates
// every length against the task and the position plugin). An error only if
// the task cannot be loaded at a length (a file that changed since).
absl::Status EvaluateAtContexts(const Model& model, const Experiment& spec, RunMetrics* metrics);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_CONTEXT_EVALS_H_
