#ifndef TVLAB_FRAMEWORK_TRAIN_SCHEDULE_RESUME_H_
#define TVLAB_FRAMEWORK_TRAIN_SCHEDULE_RESUME_H_

// Resuming a run into another length or decay (the point of WSD: one
// stable phase, several decays). `--resume RUN_DIR --set ...` may change
// train.steps and the schedule's options only, and only when every step
// the checkpoint has already taken had bitwise the same learning rate under
// the new settings: then the resumed run is exactly a run started with the
// new settings (data and dropout are keyed by the step). For wsd that means
// the checkpoint is from before the decay under both the old and the new
// length; a schedule whose every rate depends on train.steps (warmup_cosine,
// warmup_linear) cannot be resumed into another length at all.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// OK when `overrides` (the --set arguments, "field=value") name only
// train.steps and train.lr_schedule.options.* and, from `recorded` (the
// run's resolved spec) to `resumed` (it with the overrides), the rates of
// steps [0, steps_taken) are bitwise unchanged and steps_taken <
// resumed.train.steps. Otherwise InvalidArgument naming the field or the
// first step whose rate changes, and what to do instead.
absl::Status CheckResumeOverrides(const std::vector<std::string>& overrides, const Experiment& recorded,
                                  const Experiment& resumed, int64_t steps_taken);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SCHEDULE_RESUME_H_
