#ifndef TVLAB_FRAMEWORK_TRAIN_EVALUATE_H_
#define TVLAB_FRAMEWORK_TRAIN_EVALUATE_H_

// Evaluation on the task's held-out examples, by task kind:
//   tagging         token and sequence accuracy (greedy argmax per position)
//   classification  accuracy
//   language model  loss, perplexity, bits per byte, next-token accuracy,
//                   and the unigram baseline perplexity
//   sequence pair   teacher-forced loss and token accuracy, plus exact match
//                   (and corpus BLEU where the task asks) of generated
//                   outputs, decoded with spec.eval().decoding()
//
// Sharded over the ranks of a data-parallel run (docs/distributed.md): rank
// r of N evaluates a contiguous share of the evaluation batches (and of the
// decoded examples); the sums the metrics are built from (loss x tokens,
// correct tokens and sequences, exact matches, BLEU statistics) are
// all-reduced, so every rank gets the one-process metrics.

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
// leaves the others absent. `full` = false skips generation (periodic
// evaluation during training). Collective over `world` (null: one process):
// every rank calls it alike; an error is a failed all-reduce.
absl::Status Evaluate(const Model& model, const Task& task, const Experiment& spec, bool full,
                      RunMetrics* metrics, Communicator* world = nullptr);

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

// The RunMetrics fields Evaluate(full = true) fills for `task` under `spec`
// (zeros included: a real 0 accuracy is a value); the other evaluation
// fields do not apply to it. Used for the TensorBoard curves.
std::vector<std::string> EvaluationMetricNames(const Task& task, const Experiment& spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_EVALUATE_H_
