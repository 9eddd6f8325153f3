#ifndef TVLAB_FRAMEWORK_DATA_SEQUENCE_PAIRS_H_
#define TVLAB_FRAMEWORK_DATA_SEQUENCE_PAIRS_H_

// Sequence-pair tasks (source -> target) packed for either family:
//   decoder-only     inputs  BOS s1..sn SEP t1..tm
//                    targets  -  ..  -  t1  t2..EOS   (loss on the target only)
//   encoder-decoder  source  s1..sn EOS
//                    inputs  BOS t1..tm,  targets t1..tm EOS
// Rows are padded at the end (PAD inputs, ignored targets) and carry their
// lengths, so attention masks the padding.

#include <memory>
#include <vector>

#include "framework/core/rng.h"
#include "framework/interfaces/task.h"

namespace tvlab {

Batch PackDecoderOnly(const std::vector<Example>& examples);
Batch PackEncoderDecoder(const std::vector<Example>& examples);

// Base for sequence-pair tasks made of examples: subclasses produce
// examples; batching, packing for the spec's family and the evaluation split
// are shared.
class SequencePairTaskBase : public SequencePairTask {
 public:
  explicit SequencePairTaskBase(ModelSpec::Family family) : family_(family) {}
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override;
  Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const override;
  Example EvalExample(uint64_t eval_seed, int64_t index) const override;
  // Longest packed row for this family, from the longest source and target.
  int64_t max_length() const override;

 protected:
  // Training example `index` of the stream keyed by `seed`.
  virtual Example TrainExample(uint64_t seed, int64_t index) const = 0;
  virtual Example HeldOutExample(uint64_t eval_seed, int64_t index) const = 0;
  virtual int64_t max_source_length() const = 0;
  virtual int64_t max_target_length() const = 0;

 private:
  Batch Pack(const std::vector<Example>& examples) const;
  ModelSpec::Family family_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_SEQUENCE_PAIRS_H_
