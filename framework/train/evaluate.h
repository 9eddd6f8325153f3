#ifndef TVLAB_FRAMEWORK_TRAIN_EVALUATE_H_
#define TVLAB_FRAMEWORK_TRAIN_EVALUATE_H_

// Evaluation on the task's held-out examples: for every task the
// teacher-forced loss and token and sequence accuracy (greedy argmax per
// position), then what the kind's row (TaskKindRow::evaluations,
// framework/interfaces/task.h) asks for:
//   kEvaluateAccuracy    accuracy (classification)
//   kEvaluatePerplexity  perplexity, per byte, bits per byte, and the unigram
//                        baseline perplexity (language model)
//   kEvaluateGeneration  exact match (and corpus BLEU where the task asks) of
//                        generated outputs, decoded with eval.decoding()
//                        (sequence pair)
// Evaluation at another context length is the task's: pass
// task.EvaluatedAt(length) (context_evals.h).
//
// Sharded over the ranks of a data-parallel run (docs/distributed.md): rank
// r of N evaluates a contiguous share of the evaluation batches (and of the
// decoded examples); the sums the metrics are built from (loss x tokens,
// correct tokens and sequences, exact matches, BLEU statistics) are
// all-reduced, so every rank gets the one-process metrics.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/distributed/communicator.h"
#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

// Fills the evaluation fields of `metrics` that apply to the task's kind and
// leaves the others absent. `eval` says which examples and how to decode;
// `model_spec` is the model's (its family and max_seq_len bound decoding).
// `full` = false skips generation and the unigram baseline (periodic
// evaluation during training). Collective over `world` (null: one process):
// every rank calls it alike; an error is a failed all-reduce. When
// `target_tokens` is not null it receives the number of target tokens the
// loss is the mean over (those not kIgnoreTarget, over all ranks).
absl::Status Evaluate(const Model& model, const Task& task, const EvalSpec& eval, const ModelSpec& model_spec,
                      bool full, RunMetrics* metrics, Communicator* world = nullptr,
                      int64_t* target_tokens = nullptr);

// Rank `rank` of `ranks`' contiguous share [first, end) of `count` items
// (batches or examples): [count * rank / ranks, count * (rank + 1) / ranks);
// the shares' sizes differ by at most one, and some are empty when
// count < ranks.
struct Share {
  int64_t first = 0, end = 0;
};
Share ShareOf(int64_t count, int rank, int ranks);

// Mean negative log-likelihood per byte of text, from the mean per token
// over `tokens` target tokens that stand for `bytes` bytes (0 without
// bytes): perplexity_per_byte = exp(this), bits_per_byte = this / ln 2.
double NllPerByte(double mean_nll_per_token, int64_t tokens, double bytes);

// The RunMetrics fields Evaluate(full = true) fills for `task` under `eval`
// (zeros included: a real 0 accuracy is a value); the other evaluation
// fields do not apply to it. Used for the TensorBoard curves.
std::vector<std::string> EvaluationMetricNames(const Task& task, const EvalSpec& eval);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_EVALUATE_H_
