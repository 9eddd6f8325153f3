#ifndef TVLAB_FRAMEWORK_DATA_DIGIT_PAIRS_H_
#define TVLAB_FRAMEWORK_DATA_DIGIT_PAIRS_H_

// Shared by the synthetic digit sequence-pair tasks (plugins/task/copy,
// reverse, sort, addition): their token alphabet and example streams.
// Tokens: the specials of interfaces/task.h (0..3), then digits
// 0..num_digits-1 (4..), then '+'. Each source belongs to the training or
// the held-out split by a hash of its tokens (heldout_split.h): training
// examples are redrawn until their source is a training one, evaluation
// examples until theirs is held out.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/core/rng.h"
#include "framework/data/sequence_pairs.h"

namespace tvlab {

class DigitPairTask : public SequencePairTaskBase {
 public:
  static constexpr int32_t kFirstDigit = 4;

  DigitPairTask(ModelSpec::Family family, int64_t num_digits, int64_t max_source,
                int64_t max_target);

  int64_t vocab_size() const override { return kFirstDigit + num_digits_ + 1; }  // + '+'
  std::vector<int32_t> Tokenize(const std::string& text) const override;
  std::string Detokenize(const std::vector<int32_t>& tokens) const override;

 protected:
  int32_t plus() const { return static_cast<int32_t>(kFirstDigit + num_digits_); }
  int64_t max_source_length() const override { return max_source_; }
  int64_t max_target_length() const override { return max_target_; }
  Example TrainExample(uint64_t seed, int64_t index) const override;
  Example HeldOutExample(uint64_t eval_seed, int64_t index) const override;
  // One example from its own stream, using words from `first_word` on
  // (each redraw starts at a new first_word).
  virtual Example Make(const RngStream& rng, uint64_t first_word) const = 0;
  // For messages: the task's registered name.
  virtual const char* name() const = 0;

  int64_t num_digits_, max_source_, max_target_;
};

// copy / reverse / sort of a random digit string whose length is uniform in
// [min_length, max_length].
class TransformDigitsTask : public DigitPairTask {
 public:
  enum Op { kCopy, kReverse, kSort };
  TransformDigitsTask(ModelSpec::Family family, int64_t min_length, int64_t max_length,
                      int64_t num_digits, Op op);

 private:
  Example Make(const RngStream& rng, uint64_t first_word) const override;
  int64_t min_;
  Op op_;
};

// The checks copy, reverse and sort share, including that there are enough
// distinct digit strings to hold some out; `path` is the options' field path.
absl::Status ValidateDigitStrings(int64_t min_length, int64_t max_length, int64_t num_digits,
                                  const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_DIGIT_PAIRS_H_
