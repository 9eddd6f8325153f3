#include "framework/train/evaluate.h"

#include "framework/backend/backend.h"

#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/data/bleu.h"
#include "framework/model/decoding.h"

namespace tvlab {
namespace {

// Teacher-forced loss and accuracies over the evaluation batches; returns
// the number of target tokens the loss is the mean over.
int64_t TeacherForced(const Model& model, const Task& task, const EvalSpec& eval, RunMetrics* m) {
  NoGradGuard no_grad;
  const int64_t examples = task.NumEvalExamples(eval.examples());
  int64_t tokens = 0, correct_tokens = 0, sequences = 0, correct_sequences = 0;
  double loss_sum = 0, loss_tokens = 0;
  for (int64_t first = 0; first < examples; first += eval.batch_size()) {
    const int64_t count = std::min<int64_t>(eval.batch_size(), examples - first);
    Batch b = task.EvalBatch(eval.seed(), first, count);
    Var logits = model.Forward(b, ForwardContext{});  // (B, T', V), T' = 1 for classifiers
    const int64_t t = logits.dim(1), v = logits.dim(2);
    int64_t counted = 0;
    for (int32_t target : b.targets) counted += target != kIgnoreTarget;
    // Mean over counted targets, re-weighted to a per-token sum.
    loss_sum += CrossEntropy(Reshape(logits, {b.batch * t, v}), b.targets, kIgnoreTarget).value().item() * counted;
    loss_tokens += counted;
    // Greedy predictions by a kernel; only the ids come back to the host.
    DeviceInts predicted = DeviceInts::Empty(b.batch * t);
    CurrentBackend().ArgMaxRows(logits.value().ptr(), b.batch * t, v, predicted.ptr());
    const std::vector<int32_t> best_ids = predicted.ToVector();
    for (int64_t r = 0; r < b.batch; ++r) {
      bool all = true;
      for (int64_t p = 0; p < t; ++p) {
        const int64_t i = r * t + p;
        if (b.targets[i] == kIgnoreTarget) continue;
        const bool ok = best_ids[i] == b.targets[i];
        correct_tokens += ok;
        ++tokens;
        all = all && ok;
      }
      correct_sequences += all;
      ++sequences;
    }
  }
  m->set_eval_loss(loss_tokens > 0 ? loss_sum / loss_tokens : 0);
  m->set_token_accuracy(tokens ? static_cast<double>(correct_tokens) / tokens : 0);
  m->set_sequence_accuracy(sequences ? static_cast<double>(correct_sequences) / sequences : 0);
  return static_cast<int64_t>(loss_tokens);
}

// Exact match (and BLEU) of generated outputs on the first decode_examples.
void Generated(const Model& model, const SequencePairTask& task, const Experiment& spec, RunMetrics* m) {
  const EvalSpec& eval = spec.eval();
  const int64_t n = task.NumEvalExamples(eval.decode_examples());
  if (n <= 0) return;
  int64_t exact = 0;
  std::vector<std::string> hypotheses, references;
  for (int64_t i = 0; i < n; ++i) {
    Example e = task.EvalExample(eval.seed(), i);
    std::vector<int32_t> source, prefix;
    PromptFor(spec.model().family(), e.source, &source, &prefix);
    std::vector<int32_t> out =
        Generate(model, source, prefix, eval.decoding(), spec.model().max_seq_len(), i);
    exact += out == e.target;
    hypotheses.push_back(task.Detokenize(out));
    references.push_back(task.Detokenize(e.target));
  }
  m->set_decoded_examples(static_cast<int32_t>(n));
  m->set_exact_match(static_cast<double>(exact) / n);
  if (task.ScoredWithBleu()) m->set_bleu(CorpusBleu(hypotheses, references));
}

}  // namespace

double NllPerByte(double mean_nll_per_token, int64_t tokens, double bytes) {
  return bytes > 0 ? mean_nll_per_token * static_cast<double>(tokens) / bytes : 0;
}

void Evaluate(const Model& model, const Task& task, const Experiment& spec, bool full,
              RunMetrics* metrics) {
  const int64_t target_tokens = TeacherForced(model, task, spec.eval(), metrics);
  const int64_t examples = task.NumEvalExamples(spec.eval().examples());
  metrics->set_eval_examples(static_cast<int32_t>(examples));
  switch (task.kind()) {
    case TaskKind::kClassification:
      metrics->set_accuracy(metrics->token_accuracy());
      break;
    case TaskKind::kLanguageModel: {
      const auto& lm = static_cast<const LanguageModelTask&>(task);
      const double nll_per_byte =
          NllPerByte(metrics->eval_loss(), target_tokens, lm.EvalTargetBytes(examples));
      metrics->set_perplexity(std::exp(metrics->eval_loss()));
      metrics->set_perplexity_per_byte(std::exp(nll_per_byte));
      metrics->set_bits_per_byte(nll_per_byte / std::log(2.0));
      if (full) metrics->set_unigram_perplexity(lm.UnigramPerplexity());
      break;
    }
    case TaskKind::kSequencePair:
      if (full) Generated(model, static_cast<const SequencePairTask&>(task), spec, metrics);
      break;
    case TaskKind::kTagging:
      break;
  }
}

std::vector<std::string> EvaluationMetricNames(const Task& task, const Experiment& spec) {
  // In step with Evaluate above: TeacherForced, then the task kind's own.
  std::vector<std::string> names = {"eval_loss", "token_accuracy", "sequence_accuracy"};
  switch (task.kind()) {
    case TaskKind::kClassification:
      names.push_back("accuracy");
      break;
    case TaskKind::kLanguageModel:
      names.insert(names.end(), {"perplexity", "perplexity_per_byte", "bits_per_byte", "unigram_perplexity"});
      break;
    case TaskKind::kSequencePair:
      if (task.NumEvalExamples(spec.eval().decode_examples()) > 0) {
        names.push_back("exact_match");
        if (static_cast<const SequencePairTask&>(task).ScoredWithBleu()) names.push_back("bleu");
      }
      break;
    case TaskKind::kTagging:
      break;
  }
  return names;
}

}  // namespace tvlab
