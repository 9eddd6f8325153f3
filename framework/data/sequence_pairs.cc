#include "framework/data/sequence_pairs.h"

#include <algorithm>

namespace tvlab {

Batch PackDecoderOnly(const std::vector<Example>& examples) {
  Batch b;
  b.batch = static_cast<int64_t>(examples.size());
  for (const Example& e : examples)
    b.length = std::max<int64_t>(b.length, e.source.size() + e.target.size() + 2);
  b.inputs.assign(b.batch * b.length, kPad);
  b.targets.assign(b.batch * b.length, kIgnoreTarget);
  for (int64_t r = 0; r < b.batch; ++r) {
    const Example& e = examples[r];
    std::vector<int32_t> seq = {kBos};
    seq.insert(seq.end(), e.source.begin(), e.source.end());
    seq.push_back(kSep);
    const int64_t answer_start = static_cast<int64_t>(seq.size()) - 1;  // input index of SEP
    seq.insert(seq.end(), e.target.begin(), e.target.end());
    seq.push_back(kEos);
    const int64_t n = static_cast<int64_t>(seq.size()) - 1;  // inputs in this row
    for (int64_t t = 0; t < n; ++t) {
      b.inputs[r * b.length + t] = seq[t];
      if (t >= answer_start) b.targets[r * b.length + t] = seq[t + 1];
    }
    b.lengths.push_back(n);
  }
  return b;
}

Batch PackEncoderDecoder(const std::vector<Example>& examples) {
  Batch b;
  b.batch = static_cast<int64_t>(examples.size());
  for (const Example& e : examples) {
    b.length = std::max<int64_t>(b.length, e.target.size() + 1);
    b.source_length = std::max<int64_t>(b.source_length, e.source.size() + 1);
  }
  b.inputs.assign(b.batch * b.length, kPad);
  b.targets.assign(b.batch * b.length, kIgnoreTarget);
  b.source.assign(b.batch * b.source_length, kPad);
  for (int64_t r = 0; r < b.batch; ++r) {
    const Example& e = examples[r];
    const int64_t m = static_cast<int64_t>(e.target.size());
    for (int64_t t = 0; t <= m; ++t) {
      b.inputs[r * b.length + t] = t == 0 ? kBos : e.target[t - 1];
      b.targets[r * b.length + t] = t == m ? kEos : e.target[t];
    }
    b.lengths.push_back(m + 1);
    const int64_t n = static_cast<int64_t>(e.source.size());
    for (int64_t s = 0; s < n; ++s) b.source[r * b.source_length + s] = e.source[s];
    b.source[r * b.source_length + n] = kEos;
    b.source_lengths.push_back(n + 1);
  }
  return b;
}

Batch SequencePairTaskBase::Pack(const std::vector<Example>& examples) const {
  return family_ == ModelSpec::ENCODER_DECODER ? PackEncoderDecoder(examples)
                                               : PackDecoderOnly(examples);
}

Batch SequencePairTaskBase::TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const {
  std::vector<Example> examples;
  for (int64_t i = 0; i < batch_size; ++i) examples.push_back(TrainExample(seed, step * batch_size + i));
  return Pack(examples);
}

Batch SequencePairTaskBase::EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const {
  std::vector<Example> examples;
  for (int64_t i = 0; i < count; ++i) examples.push_back(HeldOutExample(eval_seed, first + i));
  return Pack(examples);
}

Example SequencePairTaskBase::EvalExample(uint64_t eval_seed, int64_t index) const {
  return HeldOutExample(eval_seed, index);
}

int64_t SequencePairTaskBase::max_length() const {
  if (family_ == ModelSpec::ENCODER_DECODER)
    return std::max(max_source_length(), max_target_length()) + 1;
  return max_source_length() + max_target_length() + 2;
}

}  // namespace tvlab
