#include "framework/train/context_evals.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "framework/train/evaluate.h"

namespace tvlab {
namespace {

// The evaluation at one context length.
absl::StatusOr<RunMetrics> EvaluateAt(const Model& model, const Task& task, int64_t length, const EvalSpec& eval,
                                      const ModelSpec& model_spec) {
  absl::StatusOr<std::shared_ptr<const Task>> at = task.EvaluatedAt(length);
  if (!at.ok()) return at.status();
  if (*at == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("this ", TaskKindName(task.kind()), " task evaluates at its own length (", task.eval_length(),
                     ") only"));
  }
  RunMetrics metrics;
  absl::Status evaluated = Evaluate(model, **at, eval, model_spec, /*full=*/false, &metrics);
  if (!evaluated.ok()) return evaluated;
  return metrics;
}

}  // namespace

absl::Status EvaluateAtContexts(const Model& model, const Task& task, const EvalSpec& eval,
                                const ModelSpec& model_spec, RunMetrics* metrics) {
  for (int i = 0; i < eval.context_lengths_size(); ++i) {
    const int32_t length = eval.context_lengths(i);
    absl::StatusOr<RunMetrics> at = EvaluateAt(model, task, length, eval, model_spec);
    if (!at.ok()) {
      return absl::Status(at.status().code(), absl::StrCat("the evaluation at eval.context_lengths[", i, "] (",
                                                           length, ") failed: ", at.status().message()));
    }
    ContextEval* e = metrics->add_context_evals();
    e->set_context_length(length);
    e->set_eval_loss(at->eval_loss());
    if (at->has_perplexity()) e->set_perplexity(at->perplexity());
    if (at->has_bits_per_byte()) e->set_bits_per_byte(at->bits_per_byte());
    e->set_eval_examples(at->eval_examples());
  }
  return absl::OkStatus();
}

}  // namespace tvlab
