// classify_max (classification): a sequence of random digits, labelled with
// its largest digit (num_digits classes). An encoder-only model with a
// pooled head (model.pooling MEAN or FIRST_TOKEN) learns it in seconds.
//
// Example config: plugins/task/classify_max/example.pbtxt

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
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
    return absl::OkStatus();
  }
  static absl::StatusOr<std::unique_ptr<Task>> Create(const ClassifyMaxOptions& o, const TaskArgs&) {
    return std::unique_ptr<Task>(new ClassifyMax(o));
  }

  explicit ClassifyMax(const ClassifyMaxOptions& o) : length_(o.length()), digits_(o.num_digits()) {}
  int64_t vocab_size() const override { return digits_; }
  int64_t num_classes() const override { return digits_; }
  int64_t max_length() const override { return length_; }
  Batch TrainBatch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return Draw(RngStream(seed, RngPurpose::kTrainData, step), 0, batch_size);
  }
  Batch EvalBatch(uint64_t eval_seed, int64_t first, int64_t count) const override {
    return Draw(RngStream(eval_seed, RngPurpose::kEvalData, 0), first, count);
  }

 private:
  Batch Draw(const RngStream& rng, int64_t first, int64_t count) const {
    Batch b;
    b.batch = count;
    b.length = length_;
    for (int64_t r = 0; r < count; ++r) {
      int32_t label = 0;
      for (int64_t t = 0; t < length_; ++t) {
        int32_t d = static_cast<int32_t>(rng.UniformInt((first + r) * length_ + t, digits_));
        b.inputs.push_back(d);  // (B, T)
        label = std::max(label, d);
      }
      b.targets.push_back(label);  // (B): one label per sequence
    }
    return b;
  }
  int64_t length_;
  uint32_t digits_;
};

TVLAB_REGISTER_TASK("classify_max", ClassifyMax, ClassifyMaxOptions);

}  // namespace
}  // namespace tvlab
