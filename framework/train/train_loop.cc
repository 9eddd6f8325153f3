#include "framework/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "absl/strings/str_format.h"
#include "framework/autograd/ops.h"
#include "framework/capture/step_capture.h"
#include "framework/core/status_macros.h"
#include "framework/distributed/communicator.h"
#include "framework/distributed/shard_batch.h"
#include "framework/train/gradients.h"
#include "framework/train/schedule_spec.h"
#include "framework/train/z_loss.h"

namespace tvlab {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string FormatEta(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.0fs", seconds);
  return absl::StrFormat("%dm%02ds", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
}

// "  12.3 GFLOP/s  MFU 41.2%" at `tokens_per_sec`; the MFU only with a peak,
// and nothing without a cost model.
std::string EfficiencyText(double tokens_per_sec, const TrainLoopCallbacks& callbacks) {
  if (callbacks.train_flops_per_token <= 0) return "";
  const double achieved = tokens_per_sec * callbacks.train_flops_per_token;
  std::string text = absl::StrFormat("  %.1f GFLOP/s", achieved / 1e9);
  if (callbacks.peak_flops_per_second > 0)
    absl::StrAppendFormat(&text, "  MFU %.1f%%", 100.0 * achieved / callbacks.peak_flops_per_second);
  return text;
}

// The fewest steps a run must have left for train.step_capture to try.
constexpr int64_t kStepsToCapture = 6;

// What the loop carries from step to step (from the checkpoint on resume).
struct Totals {
  int64_t tokens_seen = 0;
  double last_loss = 0;         // mean loss of the last step
  double backward_seconds = 0;  // in Backward, this process only
};

// This process's place among the ranks (one process: rank 0 of 1).
struct Ranks {
  GradientReducer* reducer = nullptr;
  int rank = 0;
  int world = 1;
};

// The error of a diverged loss under train.fail_on_divergence.
absl::Status DivergenceError(const TrainSpec& train, float lr, double loss, int64_t step) {
  return OnEveryRank(absl::AbortedError(absl::StrFormat(
      "training loss became %g at step %d%s; stopped (train.fail_on_divergence). Lower "
      "train.optimizer.options.lr (now %g), set train.clip_grad_norm, or check the data",
      loss, step,
      std::isfinite(loss) ? absl::StrFormat(", above train.divergence_loss %g", train.divergence_loss()) : "",
      lr)));
}

// The warning of a diverged loss (a result, not an error).
void WarnDiverged(const TrainSpec& train, float lr, double loss, int64_t step, std::ostream& progress) {
  progress << absl::StrFormat(
      "warning: training diverged at step %d (loss %g%s); stopped and recorded as "
      "diverged_at_step in metrics.json. Lower train.optimizer.options.lr (now %g), "
      "set train.clip_grad_norm or a warmup, or check the data to train further\n",
      step, std::isnan(loss) ? std::nan("") : loss,
      std::isfinite(loss) ? absl::StrFormat(" > train.divergence_loss %g", train.divergence_loss()) : "",
      lr);
  progress.flush();
}

// A step's loss: the mean over its micro-batches, or the loss of the
// micro-batch that diverged.
struct StepLoss {
  double mean = 0;
  std::optional<double> diverged;
};

// The train.grad_accumulation micro-batches of `step`: forward, loss (the
// global batch's mean under data parallelism, so every rank decides alike),
// backward. Adds their tokens and backward time to `totals`. A micro-batch
// whose loss diverged ends the step before its backward; an error under
// train.fail_on_divergence or from the reducer.
// The model's auxiliary losses (framework/autograd/auxiliary_outputs.h) and
// train.z_loss's (z_loss.h) join the loss that is backpropagated and judged
// for divergence, and every auxiliary output goes into `tally`; the step's
// logged loss is the task's.
absl::StatusOr<StepLoss> ForwardBackward(const TrainSpec& train, float base_lr, uint64_t seed, const Model& model,
                                         const Task& task, int64_t step, const Ranks& ranks, Totals* totals,
                                         AuxiliaryTally* tally) {
  const int64_t accumulation = train.grad_accumulation();
  double loss_sum = 0;
  for (int64_t micro = 0; micro < accumulation; ++micro) {
    const int64_t index = step * accumulation + micro;  // data and dropout key
    const Batch global = task.TrainBatch(seed, index, train.batch_size());
    // This rank's rows (all of them for one process).
    const Batch batch = ranks.world == 1 ? global : ShardBatch(global, ranks.rank, ranks.world);
    // Dropout masks keyed by the global batch: this rank draws exactly the
    // one-process masks of its rows (RngStream::ForBatchRows).
    ForwardContext context{true, seed, index};
    if (ranks.world > 1) context.shard_first_row = ranks.rank * batch.batch, context.shard_rows = batch.batch;
    AuxiliaryOutputs auxiliary;
    Var logits;  // (b, T', V)
    {
      AuxiliaryScope collect(tally->empty() ? nullptr : &auxiliary);
      logits = model.Forward(batch, context);
    }
    const Var flat = Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)});  // (b * T', V)
    Var task_loss = CrossEntropy(flat, batch.targets, kIgnoreTarget, train.label_smoothing());
    // train.z_loss (z_loss.h): the main head's, over this shard's counted rows.
    if (train.z_loss() > 0) auxiliary.AddLoss(kZLossName, train.z_loss(), ZLoss(flat, batch.targets, kIgnoreTarget));
    const Var loss = auxiliary.AddedTo(task_loss);  // task_loss itself without auxiliary losses
    const double local_task = task_loss.value().item();
    const double local_auxiliary = tally->Add(auxiliary);  // sum(coefficient * loss), 0 without
    double value = local_task, judged = local_task + local_auxiliary;  // judged: for divergence
    float weight = 1.0f;  // this rank's share of the global mean
    if (ranks.world > 1) {
      TVLAB_ASSIGN_OR_RETURN(CombinedLoss combined, ranks.reducer->CombineLoss(local_task, TargetTokens(batch)));
      value = judged = combined.loss;
      weight = static_cast<float>(combined.weight);
      if (!tally->empty()) {  // every rank judges the same number
        TVLAB_ASSIGN_OR_RETURN(CombinedLoss total,
                               ranks.reducer->CombineLoss(local_task + local_auxiliary, TargetTokens(batch)));
        judged = total.loss;
      }
    }
    if (Diverged(judged, train.divergence_loss())) {
      if (train.fail_on_divergence()) return DivergenceError(train, base_lr, judged, step);
      return StepLoss{0, judged};
    }
    loss_sum += value;
    const auto backward_start = Clock::now();
    if (ranks.world == 1) {
      Backward(accumulation == 1 ? loss : Scale(loss, 1.0f / accumulation));
    } else {
      Backward(Scale(loss, weight / accumulation));
    }
    totals->backward_seconds += Seconds(backward_start);
    totals->tokens_seen += global.batch * global.length;
  }
  return StepLoss{loss_sum / accumulation, std::nullopt};
}

// Why this run's step cannot be captured (train.step_capture), or "".
std::string CaptureBlocker(const TrainSpec& train, const AuxiliaryTally& tally, const Ranks& ranks,
                           int64_t steps_left) {
  if (train.grad_accumulation() > 1) return "train.grad_accumulation > 1 is not captured yet";
  if (ranks.world > 1) return "data-parallel steps are not captured yet";
  if (!tally.empty()) return "the model's auxiliary outputs (or train.z_loss) are read on the host every step";
  if (train.probe_every() > 0) return "train.probe_every reads activations and gradients on the host";
  if (steps_left < kStepsToCapture)
    return absl::StrFormat("%d steps to train; capture needs %d (a warm-up, two recordings, a check, a replay)",
                           steps_left, kStepsToCapture);
  return "";
}

// ForwardBackward for a step train.step_capture may record or replay (one
// micro-batch, one process, no auxiliary outputs): the same forward, loss
// and backward, with the loss read after Backward (a diverged step's
// gradients are computed and then discarded).
absl::StatusOr<StepLoss> CapturableForwardBackward(const TrainSpec& train, float base_lr, uint64_t seed,
                                                   const Model& model, const Task& task, int64_t step,
                                                   Totals* totals, StepCapture* capture) {
  const Batch batch = task.TrainBatch(seed, step, train.batch_size());
  auto eager = [&]() {
    const ForwardContext context{true, seed, step};
    Var logits;  // (b, T', V)
    {
      AuxiliaryScope collect(nullptr);
      logits = model.Forward(batch, context);
    }
    const Var flat = Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)});  // (b * T', V)
    const Var task_loss = CrossEntropy(flat, batch.targets, kIgnoreTarget, train.label_smoothing());
    capture->MarkBackward();
    const auto backward_start = Clock::now();
    Backward(task_loss);
    return EagerStep{task_loss.value(), Seconds(backward_start)};
  };
  TVLAB_ASSIGN_OR_RETURN(const CapturedStepResult done, capture->Run(step, batch, eager));
  if (Diverged(done.loss, train.divergence_loss())) {
    if (train.fail_on_divergence()) return DivergenceError(train, base_lr, done.loss, step);
    return StepLoss{0, done.loss};
  }
  totals->backward_seconds += done.backward_seconds;
  totals->tokens_seen += batch.batch * batch.length;
  return StepLoss{done.loss, std::nullopt};
}

// Whether step `step` runs the periodic evaluation (train.eval_every, and
// the last step when it is set).
bool PeriodicEvalDue(const TrainSpec& train, int64_t step) {
  return train.eval_every() > 0 && ((step + 1) % train.eval_every() == 0 || step == train.steps() - 1);
}

// Where a step stands once its update is applied.
struct StepDone {
  int64_t step = 0;
  float lr = 0;
  double grad_norm = 0;
};

// Whether step `step` writes a log row: every train.log_every steps, the
// last, one with probe values, and each periodic evaluation's.
bool WritesLogRow(const TrainSpec& train, int64_t step, const TrainingProbes& probes) {
  const bool last = step == train.steps() - 1;
  const bool log = step % train.log_every() == 0 || last || probes.HasValues();
  return log || PeriodicEvalDue(train, step);
}

// The log row and progress line of a step when one is due (WritesLogRow;
// the periodic evaluation runs here).
absl::Status LogStep(const TrainSpec& train, const StepDone& done, const Totals& totals, Clock::time_point start,
                     std::ostream& progress, const TrainLoopCallbacks& callbacks, AuxiliaryTally* tally,
                     TrainingProbes* probes) {
  const int64_t step = done.step, steps = train.steps();
  if (!WritesLogRow(train, step, *probes)) return absl::OkStatus();
  const bool eval = PeriodicEvalDue(train, step);
  TrainLogRow row;
  row.step = step;
  row.loss = totals.last_loss;
  row.lr = done.lr;
  row.grad_norm = done.grad_norm;
  row.elapsed_sec = Seconds(start);
  row.tokens_per_sec = totals.tokens_seen / std::max(row.elapsed_sec, 1e-9);
  row.auxiliary = tally->TakeIntervalMeans();
  row.probes = probes->TakeStep(step);
  const double eta = row.elapsed_sec / (step + 1) * (steps - step - 1);
  std::string eval_text;
  if (eval) {
    TVLAB_ASSIGN_OR_RETURN(const RunMetrics e, callbacks.evaluate());
    row.has_eval = true;
    row.eval_loss = e.eval_loss();
    row.eval_token_accuracy = e.token_accuracy();
    eval_text = absl::StrFormat("  eval loss %.4f acc %.3f", e.eval_loss(), e.token_accuracy());
  }
  progress << absl::StrFormat("step %5d/%d  loss %.4f  lr %.3g  %8.0f tok/s%s  ETA %s%s\n", step, steps,
                              totals.last_loss, done.lr, row.tokens_per_sec,
                              EfficiencyText(row.tokens_per_sec, callbacks), FormatEta(eta), eval_text);
  progress.flush();
  return callbacks.log(row);
}

// A checkpoint when one is due (every train.checkpoint_every steps and the
// last).
absl::Status CheckpointIfDue(const TrainSpec& train, int64_t step, const TrainState& state, const Totals& totals,
                             Clock::time_point start, const TrainLoopCallbacks& callbacks,
                             const AuxiliaryTally& tally) {
  const bool last = step == train.steps() - 1;
  if (!last && !(train.checkpoint_every() > 0 && (step + 1) % train.checkpoint_every() == 0))
    return absl::OkStatus();
  TrainState at = state;
  at.set_next_step(static_cast<int32_t>(step + 1));
  at.set_last_loss(totals.last_loss);
  at.set_tokens_seen(static_cast<double>(totals.tokens_seen));
  at.set_elapsed_seconds(Seconds(start));
  tally.SaveTo(&at);
  return callbacks.checkpoint(at);
}

TrainLoopResult Result(const Totals& totals, Clock::time_point start, int64_t steps_done,
                       const AuxiliaryTally& tally, const TrainingProbes& probes, const StepCapture& capture,
                       double peak_flops_per_second) {
  TrainLoopResult result;
  result.step_capture = capture.summary();
  result.captured_steps = capture.replayed_steps();
  result.step_profile = capture.ProfileTable(peak_flops_per_second);
  result.step_profile_summary = capture.ProfileSummary(peak_flops_per_second);
  result.auxiliary_last_interval = tally.LastIntervalMeans();
  result.auxiliary_run = tally.RunMeans();
  result.tokens_seen = totals.tokens_seen;
  result.last_loss = totals.last_loss;
  result.train_seconds = Seconds(start);
  result.backward_seconds = totals.backward_seconds;
  result.steps_done = steps_done;
  result.probes = probes.Summary();
  result.probe_seconds = probes.seconds();
  return result;
}

}  // namespace

bool Diverged(double loss, float divergence_loss) {
  return !std::isfinite(loss) || (divergence_loss > 0 && loss > divergence_loss);
}

absl::StatusOr<TrainLoopResult> RunTrainLoop(const TrainSpec& train, uint64_t seed, const Model& model,
                                             const Task& task, const NamedVars& params, Optimizer& optimizer,
                                             const TrainState& state, bool skip_training, std::ostream& progress,
                                             const TrainLoopCallbacks& callbacks) {
  const int64_t steps = train.steps();
  // Elapsed time continues from the checkpoint's.
  const auto start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(state.elapsed_seconds()));
  const int64_t first_step = skip_training ? steps : state.next_step();
  TVLAB_ASSIGN_OR_RETURN(const std::unique_ptr<Schedule> schedule, BuildSchedule(train.lr_schedule()));
  Totals totals{static_cast<int64_t>(state.tokens_seen()), state.last_loss(), 0};
  AuxiliaryTally tally(TrainingAuxiliaryOutputs(train, model.DeclaredAuxiliaryOutputs()));
  TVLAB_RETURN_IF_ERROR(tally.RestoreFrom(state));
  Ranks ranks;
  if (callbacks.reducer != nullptr)
    ranks = Ranks{callbacks.reducer, callbacks.reducer->rank(), callbacks.reducer->world_size()};
  TrainingProbes probes(train, seed, model, task, params, ranks.rank, ranks.world);  // off: no-ops
  std::ostringstream quiet;
  const std::string blocker = CaptureBlocker(train, tally, ranks, steps - first_step);
  if (train.step_capture() == TrainSpec::CAPTURE_REQUIRED && !blocker.empty() && first_step < steps)
    return absl::FailedPreconditionError(absl::StrCat(
        "train.step_capture is CAPTURE_REQUIRED, but this run's step cannot be captured: ", blocker,
        ". Set train.step_capture: CAPTURE_AUTO to train eagerly instead"));
  // Too few steps is said in metrics.json only; other reasons also here.
  StepCapture capture(train.step_capture(), blocker, params, steps - first_step >= kStepsToCapture ? progress : quiet);
  const bool capturable = blocker.empty() && train.step_capture() != TrainSpec::CAPTURE_OFF;
  if (train.step_profile()) capture.EnableProfile();
  for (int64_t step = first_step; step < steps; ++step) {
    if (ranks.world > 1) ranks.reducer->SetPhase(absl::StrFormat("step %d", step));
    ZeroGrads(params);
    probes.ProbeForward(step);  // at the weights the step starts from
    TVLAB_ASSIGN_OR_RETURN(
        const StepLoss loss,
        capturable ? CapturableForwardBackward(train, optimizer.lr(), seed, model, task, step, &totals, &capture)
                   : ForwardBackward(train, optimizer.lr(), seed, model, task, step, ranks, &totals, &tally));
    if (loss.diverged) {
      WarnDiverged(train, optimizer.lr(), *loss.diverged, step, progress);
      TrainLoopResult result = Result(totals, start, step, tally, probes, capture, callbacks.peak_flops_per_second);
      result.diverged_at_step = step;
      result.diverged_loss = std::isnan(*loss.diverged) ? std::nan("") : *loss.diverged;  // "nan", not "-nan"
      return result;
    }
    totals.last_loss = loss.mean;
    if (ranks.world > 1) TVLAB_RETURN_IF_ERROR(ranks.reducer->ReduceGradients(params));
    if (probes.Due(step)) probes.ProbeGradients();  // before clipping
    StepDone done;
    done.step = step;
    // The norm (a pass over every gradient and a device-to-host copy) only
    // where it clips or is logged; unlogged steps without clipping skip it.
    if (train.clip_grad_norm() > 0 || WritesLogRow(train, step, probes))
      done.grad_norm = ClipGradNorm(params, train.clip_grad_norm());
    done.lr = schedule->Rate(optimizer.lr(), step, steps);
    optimizer.Step(done.lr);
    TVLAB_RETURN_IF_ERROR(LogStep(train, done, totals, start, progress, callbacks, &tally, &probes));
    TVLAB_RETURN_IF_ERROR(CheckpointIfDue(train, step, state, totals, start, callbacks, tally));
    if (callbacks.hooks != nullptr) callbacks.hooks->AfterStep(step);
  }
  return Result(totals, start, steps, tally, probes, capture, callbacks.peak_flops_per_second);
}

}  // namespace tvlab
