// The inverse square root schedule (Vaswani et al. 2017): at step s (1-based)
// and W = warmup_steps,
//   lr * sqrt(W) * min(1 / sqrt(s), s / W^1.5)
// i.e. linear warmup, then 1/sqrt(s) decay, peaking at lr when s = W (the
// old lr_schedule { kind: INVERSE_SQRT }, bit for bit).
//
// Example config (configs/sort_digits_inverse_sqrt.pbtxt):
//   lr_schedule { plugin: "inverse_sqrt" options { [type.googleapis.com/tvlab.InverseSqrtOptions] { warmup_steps: 100 } } }

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/schedule.h"
#include "plugins/schedule/inverse_sqrt/inverse_sqrt.pb.h"

namespace tvlab {
namespace {

class InverseSqrt : public Schedule {
 public:
  static absl::Status Validate(const InverseSqrtOptions& o, const ScheduleArgs&) {
    if (o.warmup_steps() > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("warmup_steps must be > 0 (got ", o.warmup_steps(),
                                                   "); it sets where the rate peaks, e.g. 4000"));
  }
  static std::unique_ptr<Schedule> Create(const InverseSqrtOptions& o, const ScheduleArgs&) {
    return std::make_unique<InverseSqrt>(o.warmup_steps());
  }
  explicit InverseSqrt(int32_t warmup_steps) : warmup_steps_(warmup_steps) {}

  float Rate(float lr, int64_t step, int64_t) const override {
    const double warmup = warmup_steps_;
    const double s = static_cast<double>(step) + 1.0;  // steps taken after this one
    const double w = std::max(warmup, 1.0);
    return static_cast<float>(lr * std::sqrt(w) * std::min(1.0 / std::sqrt(s), s / std::pow(w, 1.5)));
  }

 private:
  int32_t warmup_steps_;
};

TVLAB_REGISTER_SCHEDULE("inverse_sqrt", InverseSqrt, InverseSqrtOptions);

}  // namespace
}  // namespace tvlab
