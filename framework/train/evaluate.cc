#include "framework/train/evaluate.h"

#include <algorithm>
#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/status_macros.h"
#include "framework/data/bleu.h"
#include "framework/model/decoding.h"

namespace tvlab {
namespace {

// Teacher-forced loss and accuracies over the evaluation batches (this
// rank's share of them, summed over the ranks); returns the number of target
// tokens the loss is the mean over.
absl::StatusOr<int64_t> TeacherForced(const Model& model, const Task& task, const EvalSpec& eval,
                                      RunMetrics* m, Communicator& world) {
  NoGradGuard no_grad;
  const int64_t examples = task.NumEvalExamples(eval.examples());
  // Whole batches per rank: each batch is the one-process run's batch (same
  // rows, same padding), so only the order of the sums below differs.
  const int64_t batches = (examples + eval.batch_size() - 1) / eval.batch_size();
  const Share mine = ShareOf(batches, world.rank(), world.size());
  int64_t tokens = 0, correct_tokens = 0, sequences = 0, correct_sequences = 0;
  double loss_sum = 0, loss_tokens = 0;
  for (int64_t batch = mine.first; batch < mine.end; ++batch) {
    const int64_t first = batch * eval.batch_size();
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
  // Whole numbers below 2^53 add exactly in doubles.
  double sums[6] = {loss_sum, loss_tokens, static_cast<double>(tokens), static_cast<double>(correct_tokens),
                    static_cast<double>(sequences), static_cast<double>(correct_sequences)};
  TVLAB_RETURN_IF_ERROR(world.AllReduceSum(sums, 6, "the evaluation all-reduce"));
  loss_sum = sums[0], loss_tokens = sums[1];
  m->set_eval_loss(loss_tokens > 0 ? loss_sum / loss_tokens : 0);
  m->set_token_accuracy(sums[2] > 0 ? sums[3] / sums[2] : 0);
  m->set_sequence_accuracy(sums[4] > 0 ? sums[5] / sums[4] : 0);
  return static_cast<int64_t>(loss_tokens);
}

// Exact match (and BLEU) of generated outputs on the first decode_examples
// (this rank's share of them; counts and BLEU statistics summed over ranks).
absl::Status Generated(const Model& model, const SequencePairTask& task, const Experiment& spec, RunMetrics* m,
                       Communicator& world) {
  const EvalSpec& eval = spec.eval();
  const int64_t n = task.NumEvalExamples(eval.decode_examples());
  if (n <= 0) return absl::OkStatus();
  const Share mine = ShareOf(n, world.rank(), world.size());
  // {exact matches, BLEU statistics (BleuStatistics::kCount)}
  double sums[1 + BleuStatistics::kCount] = {};
  BleuStatistics bleu;
  for (int64_t i = mine.first; i < mine.end; ++i) {
    Example e = task.EvalExample(eval.seed(), i);
    std::vector<int32_t> source, prefix;
    PromptFor(spec.model().family(), e.source, &source, &prefix);
    std::vector<int32_t> out =
        Generate(model, source, prefix, eval.decoding(), spec.model().max_seq_len(), i);
    sums[0] += out == e.target;
    if (task.ScoredWithBleu()) AddBleuStatistics(task.Detokenize(out), task.Detokenize(e.target), &bleu);
  }
  std::copy(bleu.data(), bleu.data() + BleuStatistics::kCount, sums + 1);  // host: counts
  TVLAB_RETURN_IF_ERROR(world.AllReduceSum(sums, 1 + BleuStatistics::kCount, "the decoding evaluation all-reduce"));
  std::copy(sums + 1, sums + 1 + BleuStatistics::kCount, bleu.data());  // host: counts
  m->set_decoded_examples(static_cast<int32_t>(n));
  m->set_exact_match(sums[0] / n);
  if (task.ScoredWithBleu()) m->set_bleu(BleuFromStatistics(bleu));
  return absl::OkStatus();
}

}  // namespace

double NllPerByte(double mean_nll_per_token, int64_t tokens, double bytes) {
  return bytes > 0 ? mean_nll_per_token * static_cast<double>(tokens) / bytes : 0;
}

Share ShareOf(int64_t count, int rank, int ranks) {
  return Share{count * rank / ranks, count * (rank + 1) / ranks};
}

absl::Status Evaluate(const Model& model, const Task& task, const Experiment& spec, bool full,
                      RunMetrics* metrics, Communicator* world) {
  SingleProcess one_process;
  Communicator& ranks = world != nullptr ? *world : one_process;
  TVLAB_ASSIGN_OR_RETURN(const int64_t target_tokens, TeacherForced(model, task, spec.eval(), metrics, ranks));
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
      if (full) {
        TVLAB_RETURN_IF_ERROR(Generated(model, static_cast<const SequencePairTask&>(task), spec, metrics, ranks));
      }
      break;
    case TaskKind::kTagging:
      break;
  }
  return absl::OkStatus();
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
