#include "framework/train/context_evals.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "framework/data/load_task.h"
#include "framework/train/evaluate.h"

namespace tvlab {

absl::Status EvaluateAtContexts(const Model& model, const Experiment& spec, RunMetrics* metrics) {
  for (int i = 0; i < spec.eval().context_lengths_size(); ++i) {
    const int32_t length = spec.eval().context_lengths(i);
    Experiment at = spec;
    at.mutable_eval()->set_context_length(length);
    // Loaded asking for one window (that fits whenever one does), then
    // evaluated on as many as eval.examples that the held-out text holds.
    at.mutable_eval()->set_examples(1);
    absl::StatusOr<std::shared_ptr<const Task>> task = LoadTask(at);
    if (!task.ok()) {
      return absl::Status(task.status().code(), absl::StrCat("eval.context_lengths[", i, "] (", length,
                                                             "): ", task.status().message()));
    }
    at.mutable_eval()->set_examples(static_cast<int32_t>((*task)->NumEvalExamples(spec.eval().examples())));
    RunMetrics at_length;
    Evaluate(model, **task, at, /*full=*/false, &at_length);
    ContextEval* e = metrics->add_context_evals();
    e->set_context_length(length);
    e->set_eval_loss(at_length.eval_loss());
    if (at_length.has_perplexity()) e->set_perplexity(at_length.perplexity());
    if (at_length.has_bits_per_byte()) e->set_bits_per_byte(at_length.bits_per_byte());
    e->set_eval_examples(at_length.eval_examples());
  }
  return absl::OkStatus();
}

}  // namespace tvlab
