#ifndef TVLAB_FRAMEWORK_INTERFACES_SCHEDULE_H_
#define TVLAB_FRAMEWORK_INTERFACES_SCHEDULE_H_

// Schedule: the learning rate of each optimizer step as a function of the
// step, the run's length and the optimizer's rate (constant, warmup-cosine,
// warmup-linear, inverse-sqrt, warmup-stable-decay, ...). Stateless: a
// resumed run gets the rate of every step from the step alone.

#include <cstdint>

#include "framework/interfaces/plugin_entry.h"

namespace tvlab {

// What a schedule is made from (nothing beyond its options today).
struct ScheduleArgs {};

class Schedule {
 public:
  virtual ~Schedule() = default;
  // The rate of optimizer step `step` (0-based) of `total_steps`, from the
  // optimizer's rate `lr`. REQUIRES: 0 <= step < total_steps.
  virtual float Rate(float lr, int64_t step, int64_t total_steps) const = 0;
};

using ScheduleEntry = PluginEntry<Schedule, ScheduleArgs>;
Registry<ScheduleEntry>& ScheduleRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_SCHEDULE(name, Class, Options) \
  TVLAB_REGISTER_PLUGIN(ScheduleRegistry, Schedule, ScheduleArgs, name, Class, Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_SCHEDULE_H_
