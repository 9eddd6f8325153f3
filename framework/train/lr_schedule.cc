#include "framework/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace tvlab {

float LearningRate(const LrSchedule& schedule, float lr, int64_t step, int64_t total_steps) {
  const double warmup = schedule.warmup_steps();
  const double s = static_cast<double>(step) + 1.0;  // steps taken after this one
  if (schedule.kind() == LrSchedule::INVERSE_SQRT) {
    // Vaswani et al.: proportional to min(s^-0.5, s * warmup^-1.5), scaled to
    // peak at lr when s = warmup.
    const double w = std::max(warmup, 1.0);
    return static_cast<float>(lr * std::sqrt(w) * std::min(1.0 / std::sqrt(s), s / std::pow(w, 1.5)));
  }
  if (s <= warmup) return static_cast<float>(lr * s / warmup);
  if (schedule.kind() == LrSchedule::CONSTANT) return lr;
  const double floor = schedule.min_lr_ratio();
  const double span = std::max(1.0, static_cast<double>(total_steps) - warmup);
  const double progress = std::min(1.0, (s - warmup) / span);  // 0 -> 1 over the decay
  double factor = schedule.kind() == LrSchedule::WARMUP_COSINE
                      ? 0.5 * (1.0 + std::cos(M_PI * progress))
                      : 1.0 - progress;
  return static_cast<float>(lr * (floor + (1.0 - floor) * factor));
}

}  // namespace tvlab
