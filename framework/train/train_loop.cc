#include "framework/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_format.h"
#include "framework/autograd/ops.h"
#include "framework/core/status_macros.h"
#include "framework/distributed/communicator.h"
#include "framework/distributed/shard_batch.h"
#include "framework/train/lr_schedule.h"

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

}  // namespace

bool Diverged(double loss, float divergence_loss) {
  return !std::isfinite(loss) || (divergence_loss > 0 && loss > divergence_loss);
}

absl::StatusOr<TrainLoopResult> RunTrainLoop(const Experiment& spec, const Model& model, const Task& task,
                                             const NamedVars& params, AdamW& optimizer,
                                             const TrainState& state, bool skip_training,
                                             std::ostream& progress,
                                             const TrainLoopCallbacks& callbacks) {
  const TrainSpec& train = spec.train();
  const float peak_lr = train.optimizer().adamw().lr();
  const int64_t steps = train.steps(), batch_size = train.batch_size();
  const int64_t accumulation = train.grad_accumulation();
  // Elapsed time continues from the checkpoint's.
  const auto start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(state.elapsed_seconds()));
  const int64_t first_step = skip_training ? steps : state.next_step();
  int64_t tokens_seen = static_cast<int64_t>(state.tokens_seen());
  double last_loss = state.last_loss();
  double backward_seconds = 0;
  GradientReducer* reducer = callbacks.reducer;
  const int rank = reducer != nullptr ? reducer->rank() : 0;
  const int world = reducer != nullptr ? reducer->world_size() : 1;
  for (int64_t step = first_step; step < steps; ++step) {
    if (world > 1) reducer->SetPhase(absl::StrFormat("step %d", step));
    ZeroGrads(params);
    double loss_sum = 0;
    for (int64_t micro = 0; micro < accumulation; ++micro) {
      const int64_t index = step * accumulation + micro;  // data and dropout key
      const Batch global = task.TrainBatch(spec.seed(), index, batch_size);
      // This rank's rows (all of them for one process).
      const Batch batch = world == 1 ? global : ShardBatch(global, rank, world);
      // Dropout masks keyed by the global batch: this rank draws exactly the
      // one-process masks of its rows (RngStream::ForBatchRows).
      ForwardContext context{true, spec.seed(), index};
      if (world > 1) context.shard_first_row = rank * batch.batch, context.shard_rows = batch.batch;
      Var logits = model.Forward(batch, context);  // (b, T', V)
      Var loss = CrossEntropy(Reshape(logits, {batch.batch * logits.dim(1), logits.dim(2)}),
                              batch.targets, kIgnoreTarget, train.label_smoothing());
      double value = loss.value().item();
      float weight = 1.0f;  // this rank's share of the global mean
      if (world > 1) {
        TVLAB_ASSIGN_OR_RETURN(CombinedLoss combined, reducer->CombineLoss(value, TargetTokens(batch)));
        value = combined.loss;
        weight = static_cast<float>(combined.weight);
      }
      // `value` is the global loss: every rank decides alike below.
      if (Diverged(value, train.divergence_loss()) && train.fail_on_divergence()) {
        return OnEveryRank(absl::AbortedError(absl::StrFormat(
            "training loss became %g at step %d%s; stopped (train.fail_on_divergence). Lower "
            "train.optimizer.adamw.lr (now %g), set train.clip_grad_norm, or check the data",
            value, step,
            std::isfinite(value) ? absl::StrFormat(", above train.divergence_loss %g", train.divergence_loss()) : "",
            peak_lr)));
      }
      if (Diverged(value, train.divergence_loss())) {
        progress << absl::StrFormat(
            "warning: training diverged at step %d (loss %g%s); stopped and recorded as "
            "diverged_at_step in metrics.json. Lower train.optimizer.adamw.lr (now %g), "
            "set train.clip_grad_norm or a warmup, or check the data to train further\n",
            step, std::isnan(value) ? std::nan("") : value,
            std::isfinite(value) ? absl::StrFormat(" > train.divergence_loss %g", train.divergence_loss()) : "",
            peak_lr);
        progress.flush();
        TrainLoopResult result;
        result.tokens_seen = tokens_seen;
        result.last_loss = last_loss;
        result.train_seconds = Seconds(start);
        result.steps_done = step;
        result.diverged_at_step = step;
        result.diverged_loss = std::isnan(value) ? std::nan("") : value;  // "nan", not "-nan"
        return result;
      }
      loss_sum += value;
      const auto backward_start = Clock::now();
      if (world == 1) {
        Backward(accumulation == 1 ? loss : Scale(loss, 1.0f / accumulation));
      } else {
        Backward(Scale(loss, weight / accumulation));
      }
      backward_seconds += Seconds(backward_start);
      tokens_seen += global.batch * global.length;
    }
    last_loss = loss_sum / accumulation;
    if (world > 1) TVLAB_RETURN_IF_ERROR(reducer->ReduceGradients(params));
    const double grad_norm = ClipGradNorm(params, train.clip_grad_norm());
    const float lr = LearningRate(train.lr_schedule(), peak_lr, step, steps);
    optimizer.Step(lr);

    const bool last = step == steps - 1;
    const bool log = step % train.log_every() == 0 || last;
    const bool eval = train.eval_every() > 0 && ((step + 1) % train.eval_every() == 0 || last);
    if (log || eval) {
      TrainLogRow row;
      row.step = step;
      row.loss = last_loss;
      row.lr = lr;
      row.grad_norm = grad_norm;
      row.elapsed_sec = Seconds(start);
      row.tokens_per_sec = tokens_seen / std::max(row.elapsed_sec, 1e-9);
      const double eta = row.elapsed_sec / (step + 1) * (steps - step - 1);
      std::string eval_text;
      if (eval) {
        TVLAB_ASSIGN_OR_RETURN(const RunMetrics e, callbacks.evaluate());
        row.has_eval = true;
        row.eval_loss = e.eval_loss();
        row.eval_token_accuracy = e.token_accuracy();
        eval_text = absl::StrFormat("  eval loss %.4f acc %.3f", e.eval_loss(), e.token_accuracy());
      }
      progress << absl::StrFormat("step %5d/%d  loss %.4f  lr %.3g  %8.0f tok/s  ETA %s%s\n", step,
                                  steps, last_loss, lr, row.tokens_per_sec, FormatEta(eta), eval_text);
      progress.flush();
      TVLAB_RETURN_IF_ERROR(callbacks.log(row));
    }
    const bool checkpoint =
        last || (train.checkpoint_every() > 0 && (step + 1) % train.checkpoint_every() == 0);
    if (checkpoint) {
      TrainState at = state;
      at.set_next_step(static_cast<int32_t>(step + 1));
      at.set_last_loss(last_loss);
      at.set_tokens_seen(static_cast<double>(tokens_seen));
      at.set_elapsed_seconds(Seconds(start));
      TVLAB_RETURN_IF_ERROR(callbacks.checkpoint(at));
    }
    if (callbacks.hooks != nullptr) callbacks.hooks->AfterStep(step);
  }
  TrainLoopResult result;
  result.tokens_seen = tokens_seen;
  result.last_loss = last_loss;
  result.train_seconds = Seconds(start);
  result.backward_seconds = backward_seconds;
  result.steps_done = steps;
  return result;
}

}  // namespace tvlab
