// Warmup then cosine decay (Loshchilov & Hutter 2017, without restarts): at
// step s (1-based) of T, W warmup steps, floor f = min_lr_ratio,
//   s <= W:  lr * s / W
//   else:    lr * (f + (1 - f) * 0.5 (1 + cos(pi p))),  p = min(1, (s - W) / max(1, T - W))
// (the old lr_schedule { kind: WARMUP_COSINE }, bit for bit).
//
// Example config (configs/seq2seq_addition.pbtxt):
//   lr_schedule { kind: WARMUP_COSINE warmup_steps: 100 min_lr_ratio: 0.1 }   (the old spelling)

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/schedule.h"
#include "plugins/schedule/warmup_cosine/warmup_cosine.pb.h"

namespace tvlab {
namespace {

class WarmupCosine : public Schedule {
 public:
  static absl::Status Validate(const WarmupCosineOptions& o, const ScheduleArgs&) {
    if (o.warmup_steps() < 0)
      return absl::InvalidArgumentError(absl::StrCat("warmup_steps must be >= 0 (got ", o.warmup_steps(), ")"));
    if (!(o.min_lr_ratio() >= 0 && o.min_lr_ratio() <= 1))
      return absl::InvalidArgumentError(absl::StrCat("min_lr_ratio must be in [0, 1] (got ", o.min_lr_ratio(), ")"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Schedule> Create(const WarmupCosineOptions& o, const ScheduleArgs&) {
    return std::make_unique<WarmupCosine>(o);
  }
  explicit WarmupCosine(const WarmupCosineOptions& o) : options_(o) {}

  float Rate(float lr, int64_t step, int64_t total_steps) const override {
    const double warmup = options_.warmup_steps();
    const double s = static_cast<double>(step) + 1.0;  // steps taken after this one
    if (s <= warmup) return static_cast<float>(lr * s / warmup);
    const double floor = options_.min_lr_ratio();
    const double span = std::max(1.0, static_cast<double>(total_steps) - warmup);
    const double progress = std::min(1.0, (s - warmup) / span);  // 0 -> 1 over the decay
    const double factor = 0.5 * (1.0 + std::cos(M_PI * progress));
    return static_cast<float>(lr * (floor + (1.0 - floor) * factor));
  }

 private:
  WarmupCosineOptions options_;
};

TVLAB_REGISTER_SCHEDULE("warmup_cosine", WarmupCosine, WarmupCosineOptions);

}  // namespace
}  // namespace tvlab
