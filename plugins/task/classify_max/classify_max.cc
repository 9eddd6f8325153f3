// classify_max (classification): a sequence of random digits, labelled with
// its largest digit (num_digits classes). An encoder-only model with a
// pooled head (model.pooling MEAN or FIRST_TOKEN) learns it in seconds.
// Every input belongs to the training or the held-out split by a hash of
// its digits (framework/data/heldout_split.h).
//
// Example config: plugins/task/classify_max/example.pbtxt

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
#include "framework/data/heldout_split.h"
#include "framework/interfaces/task.h"
#include "plugins/task/classify_max/classify_max.pb.h"

namespace tvlab {
namespace {

class ClassifyMax : public ClassificationTask {
 public:
  static absl::Status Validate(const ClassifyMaxOptions& o, const TaskArgs&) {
    if (o.length() < 1)
      return absl::InvalidArgumentError(absl::StrCat("task.options.length must be >= 1 (got ", o.length(), ")"));
    if (o.num_digits() < 2)
      return absl::InvalidArgumentError(absl::StrCat("task.options.num_digits must be >= 2 (got ", o.num_digits(), ")"));
    return CheckSplittable(std::pow(static_cast<double>(o.num_digits()), o.length()),
                           absl::StrCat("num_digits^length = ", o.num_digits(), "^", o.length()),
                           "task.options");
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const ClassifyMaxOptions& o, const TaskArgs&) {
    return std::unique_ptr<Task>(new ClassifyMax(o));
  }

  explicit ClassifyMax(const ClassifyMaxOptions& o) : length_(o.length()), digits_(o.num_digits()) {}
  int64_t vocab_size() const override { return digits_; }
  int64_t num_classes() const override { return digits_; }
  int64_t max_length() const override { return length_; }
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return Draw(RngStream(seed, RngPurpose::kTrainData, step), 0, batch_size, /*heldout=*/false);
  }
  Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const override {
    return Draw(RngStream(eval_seed, RngPurpose::kEvalData, 0), first, count, /*heldout=*/true);
  }

 private:
  // Example i uses words [i * length, (i + 1) * length) (plus
  // SplitDrawOffset on a redraw), redrawn until its input is in the wanted
  // split.
  Batch Draw(const RngStream& rng, int64_t first, int64_t count, bool heldout) const {
    Batch b;
    b.batch = count;
    b.length = length_;
    b.inputs.resize(count * length_);  // (B, T)
    for (int64_t r = 0; r < count; ++r) {
      int32_t* row = b.inputs.data() + r * length_;
      for (int attempt = 0;; ++attempt) {
        if (attempt == kMaxSplitDraws) SplitDrawsExhausted("classify_max", heldout);
        for (int64_t t = 0; t < length_; ++t)
          row[t] = static_cast<int32_t>(
              rng.UniformInt(SplitDrawOffset(attempt) + (first + r) * length_ + t, digits_));
        if (IsHeldOut(row, length_) == heldout) break;
      }
      b.targets.push_back(*std::max_element(row, row + length_));  // (B): one label per sequence
    }
    return b;
  }
  int64_t length_;
  uint32_t digits_;
};

TVLAB_REGISTER_TASK("classify_max", ClassifyMax, ClassifyMaxOptions);

}  // namespace
}  // namespace tvlab
