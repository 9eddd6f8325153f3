#ifndef TVLAB_FRAMEWORK_TRAIN_TRAIN_LOOP_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAIN_LOOP_H_

// The training loop of one run: per step, train.grad_accumulation
// micro-batches (data and dropout keyed by step * accumulation + micro),
// gradient clipping, the learning-rate schedule, a stop when the loss
// diverges (not finite, or above train.divergence_loss): a result, not an
// error.
// What happens around the steps is the caller's, through callbacks: the log
// rows (every train.log_every steps and the last), periodic evaluation
// (train.eval_every), checkpoints (train.checkpoint_every and the last step).

#include <cstdint>
#include <string>
#include <functional>
#include <optional>
#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/distributed/gradient_reducer.h"
#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"
#include "framework/interfaces/optimizer.h"
#include "framework/train/auxiliary_tally.h"
#include "framework/train/checkpoint.h"
#include "framework/train/checkpoint.pb.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/train_log_row.h"
#include "framework/train/trainer_hooks.h"

namespace tvlab {

struct TrainLoopCallbacks {
  // The periodic evaluation (eval_loss and token_accuracy are read);
  // collective under data parallelism (every rank calls it).
  std::function<absl::StatusOr<RunMetrics>()> evaluate;
  // Each log row, as the progress line for it is printed.
  std::function<absl::Status(const TrainLogRow&)> log;
  // A checkpoint is due; `state` says where training stands after the step.
  std::function<absl::Status(const TrainState&)> checkpoint;
  // Optional (tests only).
  TrainerHooks* hooks = nullptr;
  // Data parallel (framework/distributed/gradient_reducer.h): each rank
  // trains on its shard of every global batch; null: one process.
  GradientReducer* reducer = nullptr;
  // Model FLOPs per token and the device's peak FLOP/s (0: unknown): the
  // progress line adds the achieved rate and, with a peak, MFU.
  double train_flops_per_token = 0;
  double peak_flops_per_second = 0;
};

struct TrainLoopResult {
  int64_t tokens_seen = 0;
  double last_loss = 0;      // mean loss of the last step
  double train_seconds = 0;  // including the time before a resume
  double backward_seconds = 0;  // in Backward, this process only (not before a resume)
  int64_t steps_done = 0;    // steps trained in all (train.steps unless diverged)
  // Set when training diverged: the step (its update was not applied) and
  // its loss.
  std::optional<int64_t> diverged_at_step;
  double diverged_loss = 0;
  // The model's auxiliary outputs (declaration order; NaN: never emitted):
  // means over the last logging interval and over the run.
  std::vector<AuxiliaryMean> auxiliary_last_interval, auxiliary_run;
  // train.probe_every's summary (probes.h; empty when off) and the seconds
  // the probes took (part of train_seconds).
  std::vector<RunMetrics::Probe> probes;
  double probe_seconds = 0;
  // train.step_capture's outcome (StepCapture::summary) and the steps
  // replayed.
  std::string step_capture;
  int64_t captured_steps = 0;
  // train.step_profile's step_profile.tsv and its summary by kernel
  // (StepCapture::ProfileTable, ProfileSummary); empty when off or when no
  // step was replayed.
  std::string step_profile, step_profile_summary;
  // Set by the caller when training is done (RunExperiment): the live
  // tensors' and the process's high-water marks so far (RunMetrics'
  // train_peak_memory_bytes and train_peak_rss_bytes); 0 = not read.
  int64_t peak_memory_bytes = 0, peak_rss_bytes = 0;
};

// True when a step's loss counts as divergence: not finite, or above
// `divergence_loss` when that is > 0 (train.divergence_loss).
bool Diverged(double loss, float divergence_loss);

// With a reducer of N > 1 ranks, each micro-batch is the rank's contiguous
// shard of the global batch (train.batch_size rows), the loss is the global
// batch's token-weighted mean (the same number on every rank) and gradients
// are summed over the ranks before clipping, so N ranks follow one process's
// trajectory up to float rounding. Dropout masks are keyed by
// (micro-batch index, rank) then: independent across ranks, but not the
// masks one process draws.

// The model's auxiliary losses (Module::DeclaredAuxiliaryOutputs) are
// added, times their coefficients, to the loss that is backpropagated (the
// logged loss stays the task's); every auxiliary output is averaged over
// each logging interval into TrainLogRow::auxiliary.
//
// Trains from `state` (a fresh TrainState or a restored checkpoint's) up to
// train.steps, with data and dropout keyed by `seed` (the spec's seed);
// `skip_training` runs no step (evaluation of given weights).
// `progress` gets one line per log row. Divergence stops training and is
// reported in the result (no checkpoint is written for the diverged step);
// fails only with a callback's error.
absl::StatusOr<TrainLoopResult> RunTrainLoop(const TrainSpec& train, uint64_t seed, const Model& model,
                                             const Task& task, const NamedVars& params, Optimizer& optimizer,
                                             const TrainState& state, bool skip_training, std::ostream& progress,
                                             const TrainLoopCallbacks& callbacks);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAIN_LOOP_H_
