#ifndef TVLAB_FRAMEWORK_TRAIN_SPECULATIVE_EVAL_H_
#define TVLAB_FRAMEWORK_TRAIN_SPECULATIVE_EVAL_H_

// The run's measure of multi-token prediction's self-speculative decoding
// (framework/model/speculative.h): the first
// model.multi_token_prediction.speculative_eval_examples held-out rows
// (eval seed) are each cut into a prompt, up to and including the position
// of the row's first target (a sequence pair's SEP) but at least half its
// real tokens (a language model's window), and continued greedily for the
// rest of the row's length, once plainly (KV cache) and once
// self-speculatively. Records RunMetrics' speculative_* fields; does
// nothing when the field is 0 or the model has no extra heads.

#include <cstdint>
#include <vector>

#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

void RecordSpeculativeDecoding(const Experiment& spec, const Model& model, const Task& task, RunMetrics* metrics);

// The prompt length of row `row` of `batch` (the rule above). Public for tests.
int64_t SpeculativePromptLength(const Batch& batch, int64_t row);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SPECULATIVE_EVAL_H_
