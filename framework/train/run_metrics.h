#ifndef TVLAB_FRAMEWORK_TRAIN_RUN_METRICS_H_
#define TVLAB_FRAMEWORK_TRAIN_RUN_METRICS_H_

// What a run records in metrics.json (metrics.proto): the final evaluation
// and what the run cost, or, for a run whose training diverged, where it
// diverged and what the steps before it cost.

#include "absl/status/statusor.h"
#include "framework/distributed/communicator.h"
#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/perf/peak.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/train_loop.h"

namespace tvlab {

// The final evaluation (sharded over the ranks of `world`: collective), the
// evaluations at eval.context_lengths and the decoding speed (on every rank
// alike: the same weights give the same numbers), the cost of the run, and
// the evaluation examples met in training. `eval_only`: no step was
// trained (train_seconds and steps 0).
absl::StatusOr<RunMetrics> FinalMetrics(const Experiment& spec, const Model& model, const Task& task,
                                        const TrainLoopResult& trained, bool eval_only, Communicator& world);

// The process's attention call counters (framework/attention/attend.h).
struct AttentionCallCounts {
  int64_t fused = 0, unfused = 0;
  static AttentionCallCounts Now();
};
// Records the attention calls since `at_start` (read when the run began).
void RecordAttentionCalls(const AttentionCallCounts& at_start, RunMetrics* metrics);
// The optimizer plugin and the bytes of its state.
void RecordOptimizer(const OptimizerSpec& spec, const Optimizer& optimizer, RunMetrics* metrics);

// train_flops_per_token, achieved_flops_per_second (from tokens_per_second,
// which must be set) and the efficiency against `peak`.
void RecordEfficiency(double train_flops_per_token, const DevicePeak& peak, RunMetrics* metrics);

// The train.activation_checkpointing setting the run trained with.
void RecordCheckpointing(const TrainSpec& train, RunMetrics* metrics);

// The process's peak resident set size so far (getrusage), in bytes.
int64_t ProcessPeakRssBytes();

// REQUIRES: trained.diverged_at_step. Evaluation metrics stay absent.
RunMetrics DivergedMetrics(const RuntimeSpec& runtime, const Model& model, const TrainLoopResult& trained);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_RUN_METRICS_H_
