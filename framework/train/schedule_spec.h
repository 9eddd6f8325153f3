#ifndef TVLAB_FRAMEWORK_TRAIN_SCHEDULE_SPEC_H_
#define TVLAB_FRAMEWORK_TRAIN_SCHEDULE_SPEC_H_

// train.lr_schedule: its validation, and the schedule plugin it names.

#include <memory>

#include "absl/status/statusor.h"
#include "framework/core/problems.h"
#include "framework/interfaces/schedule.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Adds to `p` what is wrong with a resolved train.lr_schedule: an unknown
// plugin, options of another type, the plugin's own Validate, old fields
// left beside a plugin they could not be read into. Messages name the
// field path.
void ValidateScheduleSpec(const LrSchedule& spec, Problems* p);

// The plugin train.lr_schedule names, with its options.
// REQUIRES: `spec` passed ValidateScheduleSpec (errors are still returned).
absl::StatusOr<std::unique_ptr<Schedule>> BuildSchedule(const LrSchedule& spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SCHEDULE_SPEC_H_
