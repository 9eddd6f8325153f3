#include "framework/train/context_evals.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "framework/train/evaluate.h"

namespace tvlab {
namespace {

// The task's view for eval.context_lengths entry `length`: its own windows
// of that length, or (eval.context_targets > 0) the windows of `longest`
// tokens' ends, `length` tokens each, scoring their last context_targets
// targets.
absl::StatusOr<std::shared_ptr<const Task>> ViewAt(const Task& task, int64_t length, int64_t longest,
                                                   const EvalSpec& eval) {
  absl::StatusOr<std::shared_ptr<const Task>> at =
      eval.context_targets() > 0 ? task.EvaluatedOnSameTargets(EvalWindows{length, longest, eval.context_targets()})
                                 : task.EvaluatedAt(length);
  if (!at.ok() || *at != nullptr) return at;
  if (eval.context_targets() > 0)
    return absl::FailedPreconditionError(absl::StrCat("this ", TaskKindName(task.kind()),
                                                      " task cannot score the same targets at several contexts "
                                                      "(eval.context_targets)"));
  return absl::FailedPreconditionError(absl::StrCat("this ", TaskKindName(task.kind()),
                                                    " task evaluates at its own length (", task.eval_length(),
                                                    ") only"));
}

// The evaluation at one context length.
absl::StatusOr<ContextEval> EvaluateAt(const Model& model, const Task& task, int64_t length, int64_t longest,
                                       const EvalSpec& eval, const ModelSpec& model_spec) {
  absl::StatusOr<std::shared_ptr<const Task>> at = ViewAt(task, length, longest, eval);
  if (!at.ok()) return at.status();
  RunMetrics metrics;
  int64_t scored = 0;
  absl::Status evaluated =
      Evaluate(model, **at, eval, model_spec, /*full=*/false, &metrics, /*world=*/nullptr, &scored);
  if (!evaluated.ok()) return evaluated;
  ContextEval e;
  e.set_context_length(static_cast<int32_t>(length));
  e.set_eval_loss(metrics.eval_loss());
  if (metrics.has_perplexity()) e.set_perplexity(metrics.perplexity());
  if (metrics.has_bits_per_byte()) e.set_bits_per_byte(metrics.bits_per_byte());
  e.set_eval_examples(metrics.eval_examples());
  if (eval.context_targets() > 0) e.set_scored_tokens(static_cast<double>(scored));
  return e;
}

}  // namespace

absl::Status EvaluateAtContexts(const Model& model, const Task& task, const EvalSpec& eval,
                                const ModelSpec& model_spec, RunMetrics* metrics) {
  int64_t longest = 0;
  for (int32_t length : eval.context_lengths()) longest = std::max<int64_t>(longest, length);
  for (int i = 0; i < eval.context_lengths_size(); ++i) {
    const int32_t length = eval.context_lengths(i);
    absl::StatusOr<ContextEval> at = EvaluateAt(model, task, length, longest, eval, model_spec);
    if (!at.ok()) {
      return absl::Status(at.status().code(), absl::StrCat("the evaluation at eval.context_lengths[", i, "] (",
                                                           length, ") failed: ", at.status().message()));
    }
    *metrics->add_context_evals() = *std::move(at);
  }
  return absl::OkStatus();
}

}  // namespace tvlab
