// sort_digits (tagging): inputs are `length` random digits in
// [0, vocab_size), targets the same digits sorted ascending (seed lesson
// 000). Each training step draws a fresh batch keyed by (seed, step);
// evaluation draws from the eval seed. Every input belongs to the training
// or the held-out split by a hash of its digits (framework/data/
// heldout_split.h), so no evaluation input is ever a training input.
//
// Example config: plugins/task/sort_digits/example.pbtxt

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
#include "framework/data/heldout_split.h"
#include "framework/interfaces/task.h"
#include "plugins/task/sort_digits/sort_digits.pb.h"

namespace tvlab {
namespace {

class SortDigits : public TaggingTask {
 public:
  static absl::Status Validate(const SortDigitsOptions& o, const TaskArgs&) {
    if (o.length() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.length must be > 0 (got ", o.length(), "); the seed uses 8"));
    if (o.vocab_size() < 2)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.vocab_size must be >= 2 (got ", o.vocab_size(), "); the seed uses 10"));
    return CheckSplittable(std::pow(static_cast<double>(o.vocab_size()), o.length()),
                           absl::StrCat("vocab_size^length = ", o.vocab_size(), "^", o.length()),
                           "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const SortDigitsOptions& o, const TaskArgs&) {
    return std::unique_ptr<Task>(new SortDigits(o));
  }

  explicit SortDigits(const SortDigitsOptions& o) : length_(o.length()), vocab_(o.vocab_size()) {}

  int64_t vocab_size() const override { return vocab_; }
  int64_t max_length() const override { return length_; }
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return Draw(RngStream(seed, RngPurpose::kTrainData, step), 0, batch_size, /*heldout=*/false);
  }
  Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const override {
    return Draw(RngStream(eval_seed, RngPurpose::kEvalData, 0), first, count, /*heldout=*/true);
  }

 private:
  // Example i uses words [i * length, (i + 1) * length) of the stream (plus
  // SplitDrawOffset on a redraw), redrawn until its input is in the wanted
  // split.
  Batch Draw(const RngStream& rng, int64_t first, int64_t count, bool heldout) const {
    Batch b;
    b.batch = count;
    b.length = length_;
    b.inputs.resize(count * length_);  // (B, T)
    // Every row's first draw at once: the digits of words [first * T,
    // (first + count) * T), as UniformInt draws them one by one below.
    rng.UniformInts(first * length_, count * length_, vocab_, b.inputs.data());
    for (int64_t r = 0; r < count; ++r) {
      int32_t* row = b.inputs.data() + r * length_;
      for (int attempt = 1; IsHeldOut(row, length_) != heldout; ++attempt) {
        if (attempt == kMaxSplitDraws) SplitDrawsExhausted("sort_digits", heldout);
        for (int64_t t = 0; t < length_; ++t)
          row[t] = static_cast<int32_t>(
              rng.UniformInt(SplitDrawOffset(attempt) + (first + r) * length_ + t, vocab_));
      }
    }
    b.targets = b.inputs;  // (B, T)
    for (int64_t r = 0; r < count; ++r)
      std::sort(b.targets.begin() + r * length_, b.targets.begin() + (r + 1) * length_);
    return b;
  }

  int64_t length_;
  uint32_t vocab_;
};

TVLAB_REGISTER_TASK("sort_digits", SortDigits, SortDigitsOptions);

}  // namespace
}  // namespace tvlab
