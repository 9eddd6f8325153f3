#include "framework/train/train_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/model/decoding.h"
#include "framework/train/optimizer_spec.h"
#include "framework/train/schedule_spec.h"

namespace tvlab {

void ValidateTrainSpec(const TrainSpec& t, Problems* p) {
  p->RequirePositive("train.steps", t.steps(), "the number of optimizer steps, e.g. 1001");
  p->RequirePositive("train.batch_size", t.batch_size(), "e.g. 64");
  p->RequirePositive("train.log_every", t.log_every(), "e.g. 100");
  p->RequirePositive("train.grad_accumulation", t.grad_accumulation(), "1 = no accumulation");
  if (t.clip_grad_norm() < 0)
    p->Add(absl::StrCat("train.clip_grad_norm must be >= 0 (got ", t.clip_grad_norm(), "); 0 turns clipping off"));
  if (!(t.label_smoothing() >= 0 && t.label_smoothing() < 1))
    p->Add(absl::StrCat("train.label_smoothing must be in [0, 1) (got ", t.label_smoothing(), ")"));
  if (t.eval_every() < 0) p->Add(absl::StrCat("train.eval_every must be >= 0 (got ", t.eval_every(), ")"));
  if (t.checkpoint_every() < 0)
    p->Add(absl::StrCat("train.checkpoint_every must be >= 0 (got ", t.checkpoint_every(), ")"));
  if (!(t.divergence_loss() >= 0))
    p->Add(absl::StrCat("train.divergence_loss must be >= 0 (got ", t.divergence_loss(),
                        "); 0 counts only a NaN or infinite loss as divergence"));
  if (t.probe_every() < 0)
    p->Add(absl::StrCat("train.probe_every must be >= 0 (got ", t.probe_every(),
                        "); 0 turns the training probes off, N probes steps 0, N, 2N, ... and the last"));
  if (!(t.z_loss() >= 0) || !std::isfinite(t.z_loss()))
    p->Add(absl::StrCat("train.z_loss must be a finite number >= 0 (got ", t.z_loss(),
                        "); it weighs the mean squared log-sum-exp of the output logits in the loss: "
                        "0 turns it off, PaLM uses 1e-4"));
  if (t.step_profile() && t.step_capture() == TrainSpec::CAPTURE_OFF)
    p->Add("train.step_profile times the captured step's operations, but train.step_capture is CAPTURE_OFF; "
           "set train.step_capture: CAPTURE_AUTO (or CAPTURE_REQUIRED), or remove train.step_profile");
  ValidateScheduleSpec(t.lr_schedule(), p);
  ValidateOptimizerSpec(t.optimizer(), p);
}

namespace {

// eval.context_targets against eval.context_lengths (the task's part is
// ValidateExperiment's).
void ValidateContextTargets(const EvalSpec& e, Problems* p) {
  const int32_t n = e.context_targets();
  if (n < 0) {
    p->Add(absl::StrCat("eval.context_targets must be >= 0 (got ", n,
                        "); 0 evaluates each of eval.context_lengths on its own windows, N > 0 scores the same "
                        "N target tokens per window at every length, e.g. the shortest length"));
    return;
  }
  if (n == 0) return;
  if (e.context_lengths_size() == 0) {
    p->Add(absl::StrCat("eval.context_targets (", n,
                        ") needs eval.context_lengths: it scores the same targets at each of those "
                        "contexts; list them, e.g. context_lengths: [",
                        n, ", ", 2 * static_cast<int64_t>(n), "], or remove eval.context_targets"));
    return;
  }
  int shortest = 0;
  for (int i = 1; i < e.context_lengths_size(); ++i)
    if (e.context_lengths(i) < e.context_lengths(shortest)) shortest = i;
  const int32_t length = e.context_lengths(shortest);
  if (n > length && length >= 2)
    p->Add(absl::StrCat("eval.context_targets (", n, ") is more than the shortest context, eval.context_lengths[",
                        shortest, "] (", length, "): a window of ", length, " tokens has only ", length,
                        " targets to score; set eval.context_targets <= ", length));
}

}  // namespace

void ValidateEvalSpec(const EvalSpec& e, Problems* p) {
  p->RequirePositive("eval.examples", e.examples(), "e.g. 1000");
  p->RequirePositive("eval.batch_size", e.batch_size(), "e.g. 250");
  if (e.decode_examples() < 0)
    p->Add(absl::StrCat("eval.decode_examples must be >= 0 (got ", e.decode_examples(), "); 0 skips generation"));
  ValidateDecodingSpec(e.decoding(), "eval.decoding", p);
  if (e.context_length() < 0)
    p->Add(absl::StrCat("eval.context_length must be >= 0 (got ", e.context_length(),
                        "); 0 evaluates at the training context"));
  for (int i = 0; i < e.context_lengths_size(); ++i) {
    const int32_t length = e.context_lengths(i);
    if (length < 2)
      p->Add(absl::StrCat("eval.context_lengths[", i, "] must be >= 2 (got ", length,
                          "); list the evaluation contexts in tokens, e.g. [128, 256, 512, 1024]"));
    for (int j = 0; j < i; ++j)
      if (e.context_lengths(j) == length)
        p->Add(absl::StrCat("eval.context_lengths[", i, "] (", length, ") repeats eval.context_lengths[", j,
                            "]; list each context once"));
  }
  ValidateContextTargets(e, p);
  if (e.decode_speed_tokens() < 0)
    p->Add(absl::StrCat("eval.decode_speed_tokens must be >= 0 (got ", e.decode_speed_tokens(),
                        "); 0 does not measure decoding speed; e.g. 64"));
}

}  // namespace tvlab
