// Warmup-stable-decay (Hu et al. 2024, MiniCPM; Hägele et al. 2024): at
// step s (1-based) of T, W = warmup_steps, D = decay_steps (or
// round(decay_fraction * T)), the decay starting after step S = max(W, T - D),
// floor f = min_lr_ratio:
//   s <= W:      lr * s / W
//   s <= S:      lr                                   (stable)
//   else:        lr * (f + (1 - f) * g(p)),  p = (s - S) / (T - S)
// with g(p) = 1 - p (LINEAR), 0.5 (1 + cos(pi p)) (COSINE) or 1 - sqrt(p)
// (SQRT). Before its decay the rate is lr whatever T is, which is what lets
// WSD's stable-phase checkpoints be decayed over several lengths: a copy of
// a run directory whose latest checkpoint is in the stable phase resumes
// with --set train.steps=... --set train.lr_schedule.options.decay_steps=...
// (framework/train/schedule_resume.h; docs/checkpoints.md).
//
// Example config (configs/sort_digits_wsd.pbtxt):
//   lr_schedule { plugin: "wsd" options { [type.googleapis.com/tvlab.WsdOptions] { warmup_steps: 50 decay_fraction: 0.2 } } }

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/interfaces/schedule.h"
#include "plugins/schedule/wsd/wsd.pb.h"

namespace tvlab {
namespace {

class Wsd : public Schedule {
 public:
  static absl::Status Validate(const WsdOptions& o, const ScheduleArgs&) {
    if (o.warmup_steps() < 0 || o.decay_steps() < 0)
      return absl::InvalidArgumentError(absl::StrCat("warmup_steps and decay_steps must be >= 0 (got ",
                                                     o.warmup_steps(), ", ", o.decay_steps(), ")"));
    if (!(o.decay_fraction() > 0 && o.decay_fraction() <= 1))
      return absl::InvalidArgumentError(
          absl::StrCat("decay_fraction must be in (0, 1] (got ", o.decay_fraction(), "), e.g. 0.2"));
    if (!(o.min_lr_ratio() >= 0 && o.min_lr_ratio() <= 1))
      return absl::InvalidArgumentError(absl::StrCat("min_lr_ratio must be in [0, 1] (got ", o.min_lr_ratio(), ")"));
    return absl::OkStatus();
  }
  static std::unique_ptr<Schedule> Create(const WsdOptions& o, const ScheduleArgs&) {
    return std::make_unique<Wsd>(o);
  }
  explicit Wsd(const WsdOptions& o) : options_(o) {}

  float Rate(float lr, int64_t step, int64_t total_steps) const override {
    const double warmup = options_.warmup_steps();
    const double s = static_cast<double>(step) + 1.0;  // steps taken after this one
    if (s <= warmup) return static_cast<float>(lr * s / warmup);
    const double total = static_cast<double>(total_steps);
    const double decay = options_.decay_steps() > 0 ? options_.decay_steps()
                                                    : std::round(options_.decay_fraction() * total);
    const double start = std::max(warmup, total - decay);  // the last stable step
    if (s <= start) return lr;
    const double p = std::min(1.0, (s - start) / std::max(1.0, total - start));
    const double g = options_.decay_shape() == WsdOptions::COSINE ? 0.5 * (1.0 + std::cos(M_PI * p))
                     : options_.decay_shape() == WsdOptions::SQRT ? 1.0 - std::sqrt(p)
                                                                  : 1.0 - p;
    const double floor = options_.min_lr_ratio();
    return static_cast<float>(lr * (floor + (1.0 - floor) * g));
  }

 private:
  WsdOptions options_;
};

TVLAB_REGISTER_SCHEDULE("wsd", Wsd, WsdOptions);

}  // namespace
}  // namespace tvlab
