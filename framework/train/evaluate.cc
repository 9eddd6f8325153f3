#include "framework/train/evaluate.h"

#include <algorithm>
#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"
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
absl::Status Generated(const Model& model, const SequencePairTask& task, const EvalSpec& eval,
                       const ModelSpec& model_spec, RunMetrics* m, Communicator& world) {
  const int64_t n = task.NumEvalExamples(eval.decode_examples());
  if (n <= 0) return absl::OkStatus();
  const Share mine = ShareOf(n, world.rank(), world.size());
  // {exact matches, BLEU statistics (BleuStatistics::kCount)}
  double sums[1 + BleuStatistics::kCount] = {};
  BleuStatistics bleu;
  for (int64_t i = mine.first; i < mine.end; ++i) {
    Example e = task.EvalExample(eval.seed(), i);
    std::vector<int32_t> source, prefix;
    PromptFor(model_spec.family(), e.source, &source, &prefix);
    std::vector<int32_t> out = Generate(model, source, prefix, eval.decoding(), model_spec.max_seq_len(), i);
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

// One evaluation of the kinds' table (TaskEvaluation): what it adds to
// the teacher-forced metrics, and the names of the fields it fills.
struct EvaluationRun {
  const Model& model;
  const Task& task;
  const EvalSpec& eval;
  const ModelSpec& model_spec;
  bool full;
  int64_t target_tokens;  // the teacher-forced loss is the mean over these
  int64_t examples;       // evaluated teacher-forced
  Communicator& world;
};
struct KindEvaluation {
  TaskEvaluation which;
  absl::Status (*add)(const EvaluationRun& run, RunMetrics* metrics);
  std::vector<std::string> (*names)(const Task& task, const EvalSpec& eval);
};

// The interface the kind's row promises for `which`.
template <typename KindTask>
const KindTask& As(const Task& task, const char* which) {
  const auto* t = dynamic_cast<const KindTask*>(&task);
  TVLAB_CHECK(t != nullptr) << TaskKindName(task.kind()) << " task: its row asks for " << which
                            << ", which needs another task interface";
  return *t;
}

absl::Status AddAccuracy(const EvaluationRun&, RunMetrics* m) {
  m->set_accuracy(m->token_accuracy());
  return absl::OkStatus();
}

absl::Status AddPerplexity(const EvaluationRun& run, RunMetrics* m) {
  const auto& lm = As<LanguageModelTask>(run.task, "kEvaluatePerplexity");
  const double nll_per_byte = NllPerByte(m->eval_loss(), run.target_tokens, lm.EvalTargetBytes(run.examples));
  m->set_perplexity(std::exp(m->eval_loss()));
  m->set_perplexity_per_byte(std::exp(nll_per_byte));
  m->set_bits_per_byte(nll_per_byte / std::log(2.0));
  if (run.full) m->set_unigram_perplexity(lm.UnigramPerplexity());
  return absl::OkStatus();
}

absl::Status AddGenerated(const EvaluationRun& run, RunMetrics* m) {
  if (!run.full) return absl::OkStatus();
  return Generated(run.model, As<SequencePairTask>(run.task, "kEvaluateGeneration"), run.eval, run.model_spec, m,
                   run.world);
}

const KindEvaluation kKindEvaluations[] = {
    {kEvaluateAccuracy, AddAccuracy, [](const Task&, const EvalSpec&) -> std::vector<std::string> {
       return {"accuracy"};
     }},
    {kEvaluatePerplexity, AddPerplexity, [](const Task&, const EvalSpec&) -> std::vector<std::string> {
       return {"perplexity", "perplexity_per_byte", "bits_per_byte", "unigram_perplexity"};
     }},
    {kEvaluateGeneration, AddGenerated, [](const Task& task, const EvalSpec& eval) -> std::vector<std::string> {
       if (task.NumEvalExamples(eval.decode_examples()) <= 0) return {};
       if (As<SequencePairTask>(task, "kEvaluateGeneration").ScoredWithBleu()) return {"exact_match", "bleu"};
       return {"exact_match"};
     }},
};

}  // namespace

double NllPerByte(double mean_nll_per_token, int64_t tokens, double bytes) {
  return bytes > 0 ? mean_nll_per_token * static_cast<double>(tokens) / bytes : 0;
}

Share ShareOf(int64_t count, int rank, int ranks) {
  return Share{count * rank / ranks, count * (rank + 1) / ranks};
}

absl::Status Evaluate(const Model& model, const Task& task, const EvalSpec& eval, const ModelSpec& model_spec,
                      bool full, RunMetrics* metrics, Communicator* world, int64_t* counted_targets) {
  SingleProcess one_process;
  Communicator& ranks = world != nullptr ? *world : one_process;
  TVLAB_ASSIGN_OR_RETURN(const int64_t target_tokens, TeacherForced(model, task, eval, metrics, ranks));
  if (counted_targets != nullptr) *counted_targets = target_tokens;
  const int64_t examples = task.NumEvalExamples(eval.examples());
  metrics->set_eval_examples(static_cast<int32_t>(examples));
  const EvaluationRun run{model, task, eval, model_spec, full, target_tokens, examples, ranks};
  const uint32_t asked = TaskKindRowOf(task.kind()).evaluations;
  for (const KindEvaluation& e : kKindEvaluations)
    if (asked & e.which) TVLAB_RETURN_IF_ERROR(e.add(run, metrics));
  return absl::OkStatus();
}

std::vector<std::string> EvaluationMetricNames(const Task& task, const EvalSpec& eval) {
  std::vector<std::string> names = {"eval_loss", "token_accuracy", "sequence_accuracy"};
  const uint32_t asked = TaskKindRowOf(task.kind()).evaluations;
  for (const KindEvaluation& e : kKindEvaluations) {
    if (!(asked & e.which)) continue;
    const std::vector<std::string> added = e.names(task, eval);
    names.insert(names.end(), added.begin(), added.end());
  }
  return names;
}

}  // namespace tvlab
