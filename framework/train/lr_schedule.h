#ifndef TVLAB_FRAMEWORK_TRAIN_LR_SCHEDULE_H_
#define TVLAB_FRAMEWORK_TRAIN_LR_SCHEDULE_H_

#include <cstdint>

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Learning rate for optimizer step `step` (0-based) of `total_steps`, given
// the peak `lr` (see LrSchedule in experiment.proto for each kind's formula).
float LearningRate(const LrSchedule& schedule, float lr, int64_t step, int64_t total_steps);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_LR_SCHEDULE_H_
