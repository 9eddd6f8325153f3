// The constant schedule: at step s (1-based), lr * s / warmup_steps during
// the warmup, lr after it (the old lr_schedule { kind: CONSTANT }, bit for
// bit).
//
// Example config (configs/sort_digits.pbtxt):
//   lr_schedule { plugin: "constant" }   (the default)

#include "absl/strings/str_cat.h"
#include "framework/interfaces/schedule.h"
#include "plugins/schedule/constant/constant.pb.h"

namespace tvlab {
namespace {

class Constant : public Schedule {
 public:
  static absl::Status Validate(const ConstantScheduleOptions& o, const ScheduleArgs&) {
    if (o.warmup_steps() >= 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("warmup_steps must be >= 0 (got ", o.warmup_steps(), ")"));
  }
  static std::unique_ptr<Schedule> Create(const ConstantScheduleOptions& o, const ScheduleArgs&) {
    return std::make_unique<Constant>(o.warmup_steps());
  }
  explicit Constant(int32_t warmup_steps) : warmup_steps_(warmup_steps) {}

  float Rate(float lr, int64_t step, int64_t) const override {
    const double warmup = warmup_steps_;
    const double s = static_cast<double>(step) + 1.0;  // steps taken after this one
    if (s <= warmup) return static_cast<float>(lr * s / warmup);
    return lr;
  }

 private:
  int32_t warmup_steps_;
};

TVLAB_REGISTER_SCHEDULE("constant", Constant, ConstantScheduleOptions);

}  // namespace
}  // namespace tvlab
