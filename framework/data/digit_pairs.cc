#include "framework/data/digit_pairs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/data/heldout_split.h"

namespace tvlab {

DigitPairTask::DigitPairTask(ModelSpec::Family family, int64_t num_digits, int64_t max_source,
                             int64_t max_target)
    : SequencePairTaskBase(family),
      num_digits_(num_digits),
      max_source_(max_source),
      max_target_(max_target) {}

std::vector<int32_t> DigitPairTask::Tokenize(const std::string& text) const {
  std::vector<int32_t> out;
  for (char c : text) {
    if (c == '+') out.push_back(plus());
    else if (c >= '0' && c - '0' < num_digits_) out.push_back(kFirstDigit + (c - '0'));
  }
  return out;
}

std::string DigitPairTask::Detokenize(const std::vector<int32_t>& tokens) const {
  std::string out;
  for (int32_t t : tokens) {
    if (t == plus()) out += '+';
    else if (t >= kFirstDigit && t < kFirstDigit + num_digits_) out += static_cast<char>('0' + t - kFirstDigit);
    else if (t == kEos) out += "<eos>";
  }
  return out;
}

namespace {

// Example `index` of the stream, redrawn until its source is in the wanted
// split. Draw 0 uses the words the task used before the split existed.
template <typename MakeFn>
Example DrawFromSplit(const MakeFn& make, const RngStream& rng, bool heldout, const char* task) {
  for (int attempt = 0; attempt < kMaxSplitDraws; ++attempt) {
    Example e = make(rng, SplitDrawOffset(attempt));
    if (IsHeldOut(e.source) == heldout) return e;
  }
  SplitDrawsExhausted(task, heldout);
}

}  // namespace

Example DigitPairTask::TrainExample(uint64_t seed, int64_t index) const {
  return DrawFromSplit([this](const RngStream& r, uint64_t w) { return Make(r, w); },
                       RngStream(seed, RngPurpose::kTrainData, index), /*heldout=*/false, name());
}

Example DigitPairTask::HeldOutExample(uint64_t eval_seed, int64_t index) const {
  return DrawFromSplit([this](const RngStream& r, uint64_t w) { return Make(r, w); },
                       RngStream(eval_seed, RngPurpose::kEvalData, index), /*heldout=*/true, name());
}

TransformDigitsTask::TransformDigitsTask(ModelSpec::Family family, int64_t min_length,
                                         int64_t max_length, int64_t num_digits, Op op)
    : DigitPairTask(family, num_digits, max_length, max_length), min_(min_length), op_(op) {}

Example TransformDigitsTask::Make(const RngStream& rng, uint64_t w) const {
  const int64_t length = min_ + rng.UniformInt(w, static_cast<uint32_t>(max_source_ - min_ + 1));
  Example e;
  for (int64_t i = 0; i < length; ++i)
    e.source.push_back(kFirstDigit + static_cast<int32_t>(rng.UniformInt(w + 1 + i, num_digits_)));
  e.target = e.source;
  if (op_ == kReverse) std::reverse(e.target.begin(), e.target.end());
  if (op_ == kSort) std::sort(e.target.begin(), e.target.end());
  return e;
}

absl::Status ValidateDigitStrings(int64_t min_length, int64_t max_length, int64_t num_digits,
                                  const std::string& path) {
  if (min_length < 1)
    return absl::InvalidArgumentError(absl::StrCat(path, ".min_length must be >= 1 (got ", min_length, ")"));
  if (max_length < min_length)
    return absl::InvalidArgumentError(absl::StrCat(path, ".max_length (", max_length,
                                                   ") must be >= min_length (", min_length, ")"));
  if (num_digits < 2 || num_digits > 10)
    return absl::InvalidArgumentError(absl::StrCat(path, ".num_digits must be in [2, 10] (got ", num_digits, ")"));
  double strings = 0;
  for (int64_t n = min_length; n <= max_length && strings < kMinDistinctInputs; ++n)
    strings += std::pow(static_cast<double>(num_digits), static_cast<double>(n));
  return CheckSplittable(strings,
                         absl::StrCat("strings of ", min_length, " to ", max_length, " of ",
                                      num_digits, " digits"),
                         path);
}

}  // namespace tvlab
