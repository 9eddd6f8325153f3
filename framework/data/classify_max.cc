// classify_max: a sequence of random digits, labelled with its largest digit
// (num_digits classes). An encoder-only model with a pooled head
// (model.pooling MEAN or FIRST_TOKEN) learns it in seconds.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/core/rng.h"
#include "framework/data/task.h"

namespace tvlab {
namespace {

class ClassifyMax : public Task {
 public:
  explicit ClassifyMax(const ClassifyMaxTask& spec) : length_(spec.length()), digits_(spec.num_digits()) {}
  TaskKind kind() const override { return TaskKind::kClassification; }
  int64_t vocab_size() const override { return digits_; }
  int64_t num_outputs() const override { return digits_; }
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
        b.inputs.push_back(d);
        label = std::max(label, d);
      }
      b.targets.push_back(label);  // (B): one label per sequence
    }
    return b;
  }
  int64_t length_;
  uint32_t digits_;
};

TVLAB_REGISTER_TASK(
    "classify_max", TaskKind::kClassification,
    [](const Experiment& spec) -> absl::Status {
      const auto& t = spec.task().classify_max();
      if (t.length() < 1) return absl::InvalidArgumentError(absl::StrCat("task.classify_max.length must be >= 1 (got ", t.length(), ")"));
      if (t.num_digits() < 2) return absl::InvalidArgumentError(absl::StrCat("task.classify_max.num_digits must be >= 2 (got ", t.num_digits(), ")"));
      if (spec.model().pooling() == ModelSpec::NONE)
        return absl::InvalidArgumentError("task.classify_max labels whole sequences: set model.pooling to MEAN or FIRST_TOKEN");
      return absl::OkStatus();
    },
    [](const Experiment& spec) -> std::unique_ptr<Task> {
      return std::make_unique<ClassifyMax>(spec.task().classify_max());
    });

}  // namespace
}  // namespace tvlab
