#ifndef TVLAB_FRAMEWORK_DATA_EVAL_TRAIN_OVERLAP_H_
#define TVLAB_FRAMEWORK_DATA_EVAL_TRAIN_OVERLAP_H_

// How many evaluation examples also occur among the training examples a run
// draws: measured by building both, not assumed from how the task splits its
// data. Two examples are the same when their model inputs are the same token
// for token: the input row up to its length (for sequence pairs packed
// decoder-only that is BOS source SEP target), plus the source row for
// encoder-decoder packing.

#include <cstdint>
#include <string>
#include <vector>

#include "framework/interfaces/task.h"

namespace tvlab {

struct EvalTrainOverlap {
  int64_t eval_examples = 0;  // evaluation examples compared
  int64_t train_examples = 0;  // training rows drawn (with repeats)
  int64_t overlapping = 0;  // evaluation examples equal to some training row
  double fraction() const {
    return eval_examples > 0 ? static_cast<double>(overlapping) / eval_examples : 0.0;
  }
};

// The content of each row of `b`, as bytes (row r of the result is row r).
std::vector<std::string> RowContents(const Batch& b);

// Compares evaluation examples [0, eval_examples) of `eval_seed` with the
// training batches 0 .. train_batches - 1 of `train_seed`, each of
// `batch_size` rows (the trainer's batch index is step * grad_accumulation
// + micro step).
EvalTrainOverlap MeasureEvalTrainOverlap(const Task& task, uint64_t train_seed,
                                         int64_t train_batches, int64_t batch_size,
                                         uint64_t eval_seed, int64_t eval_examples);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_EVAL_TRAIN_OVERLAP_H_
