#include "framework/train/speculative_eval.h"

#include <algorithm>

#include "framework/model/decoding.h"
#include "framework/model/speculative.h"

namespace tvlab {

int64_t SpeculativePromptLength(const Batch& batch, int64_t row) {
  const int64_t t = batch.length;
  const int64_t real = batch.lengths.empty() ? t : batch.lengths[row];
  int64_t first_target = 0;
  while (first_target < real - 1 && batch.targets[row * t + first_target] == kIgnoreTarget) ++first_target;
  return std::max<int64_t>(std::max<int64_t>(first_target + 1, (real + 1) / 2), 1);
}

void RecordSpeculativeDecoding(const Experiment& spec, const Model& model, const Task& task, RunMetrics* metrics) {
  const int64_t requested = spec.model().multi_token_prediction().speculative_eval_examples();
  if (requested <= 0 || model.NumExtraHeads() == 0) return;
  const int64_t examples = std::min<int64_t>(requested, task.NumEvalExamples(requested));
  const Batch batch = task.EvalBatch(spec.eval().seed(), 0, examples);
  const int64_t max_positions = spec.model().max_seq_len() > 0 ? spec.model().max_seq_len() : task.max_length();
  DecodingSpec greedy;
  greedy.set_method(DecodingSpec::GREEDY);
  greedy.set_use_kv_cache(true);
  int64_t steps = 0, accepted = 0, matches = 0;
  for (int64_t r = 0; r < batch.batch; ++r) {
    const int64_t real = batch.lengths.empty() ? batch.length : batch.lengths[r];
    const int64_t p = SpeculativePromptLength(batch, r);
    const std::vector<int32_t> prompt(batch.inputs.begin() + r * batch.length,
                                      batch.inputs.begin() + r * batch.length + p);
    const int64_t max_new = std::max<int64_t>(real - p + 1, 1);
    greedy.set_max_new_tokens(static_cast<int32_t>(max_new));
    const std::vector<int32_t> plain = Generate(model, {}, prompt, greedy, max_positions, 0);
    const SpeculativeResult drafted = SpeculativeGreedy(model, prompt, max_new, max_positions);
    steps += drafted.steps;
    accepted += drafted.accepted;
    matches += drafted.tokens == plain ? 1 : 0;
  }
  metrics->set_speculative_examples(static_cast<int32_t>(batch.batch));
  if (steps > 0) metrics->set_speculative_accepted_tokens_per_step(static_cast<double>(accepted) / steps);
  metrics->set_speculative_matches_greedy(batch.batch > 0 ? static_cast<double>(matches) / batch.batch : 0.0);
}

}  // namespace tvlab
