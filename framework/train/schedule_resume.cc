#include "framework/train/schedule_resume.h"

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/core/status_macros.h"
#include "framework/interfaces/optimizer.h"
#include "framework/train/optimizer_spec.h"
#include "framework/train/schedule_spec.h"

namespace tvlab {

absl::Status CheckResumeOverrides(const std::vector<std::string>& overrides, const Experiment& recorded,
                                  const Experiment& resumed, int64_t steps_taken) {
  for (const std::string& o : overrides) {
    const std::string field = o.substr(0, o.find('='));
    if (field != "train.steps" && !absl::StartsWith(field, "train.lr_schedule.options."))
      return absl::InvalidArgumentError(absl::StrCat(
          "--resume with --set ", o, ": a resumed run may change train.steps and train.lr_schedule.options.* "
          "only (to decay a stable phase over another length, e.g. --set train.steps=3000 --set "
          "train.lr_schedule.options.decay_steps=600); start a new run for anything else"));
  }
  const int64_t total = resumed.train().steps();
  if (steps_taken >= total)
    return absl::InvalidArgumentError(absl::StrCat("train.steps: the checkpoint has taken ", steps_taken,
                                                   " steps already; give train.steps > ", steps_taken));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Schedule> before, BuildSchedule(recorded.train().lr_schedule()));
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Schedule> after, BuildSchedule(resumed.train().lr_schedule()));
  const float lr = 1.0f;  // rates scale with lr (the schedule conformance suite checks it)
  for (int64_t step = 0; step < steps_taken; ++step) {
    const float was = before->Rate(lr, step, recorded.train().steps());
    const float now = after->Rate(lr, step, total);
    if (was != now)
      return absl::InvalidArgumentError(absl::StrCat(
          "train.lr_schedule (", resumed.train().lr_schedule().plugin(), "): the checkpoint has taken ", steps_taken,
          " steps, and with the new settings step ", step, " would have had rate ", now, " * lr instead of ",
          was, " * lr, so the resumed run would not be the run these settings describe. Resume into another "
          "length or decay only from a checkpoint of the stable phase (wsd: before its decay starts, under the "
          "old and the new length alike), e.g. an earlier checkpoint copied into a new run directory"));
  }
  return absl::OkStatus();
}

}  // namespace tvlab
