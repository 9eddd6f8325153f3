// Warmup then linear decay: at step s (1-based) of T, W warmup steps, floor f = min_lr_ratio,
//   s <= W:  lr * s / W
//   else:    lr * (f + (1 - f) * (1 - p)),  p = min(1, (s - W) / max(1, T - W))
// (the old lr_schedule { kind: WARMUP_LINEAR }, bit for bit).
//
// Example config (configs/sort_digits_warmup_linear.pbtxt):
//   lr_schedule { plugin: "warmup_linear" options { [type.googleapis.com/tvlab.WarmupLinearOptions] { warmup_steps: 100 } } }

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/schedule.h"
#include "plugins/schedule/warmup_linear/warmup_linear.pb.h"

namespace tvlab {
namespace {

class WarmupLinear : public Schedule {
 public:
  static absl::Status Validate(const WarmupLinearOptions& o, const ScheduleArgs&) {
    if (o.warmup_steps() < 0)
      return absl::InvalidArgumentError(absl::StrCat("warmup_steps must be >= 0 (got ", o.warmup_steps(), ")"));
    if (!(o.min_lr_ratio() >= 0 && o.min_lr_ratio() <= 1))
      return absl::InvalidArgumentError(absl::StrCat("min_lr_ratio must be in [0, 1] (got ", o.min_lr_ratio(), ")"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Schedule> Create(const WarmupLinearOptions& o, const ScheduleArgs&) {
    return std::make_unique<WarmupLinear>(o);
  }
  explicit WarmupLinear(const WarmupLinearOptions& o) : options_(o) {}

  float Rate(float lr, int64_t step, int64_t total_steps) const override {
    const double warmup = options_.warmup_steps();
    const double s = static_cast<double>(step) + 1.0;  // steps taken after this one
    if (s <= warmup) return static_cast<float>(lr * s / warmup);
    const double floor = options_.min_lr_ratio();
    const double span = std::max(1.0, static_cast<double>(total_steps) - warmup);
    const double progress = std::min(1.0, (s - warmup) / span);  // 0 -> 1 over the decay
    const double factor = 1.0 - progress;
    return static_cast<float>(lr * (floor + (1.0 - floor) * factor));
  }

 private:
  WarmupLinearOptions options_;
};

TVLAB_REGISTER_SCHEDULE("warmup_linear", WarmupLinear, WarmupLinearOptions);

}  // namespace
}  // namespace tvlab
