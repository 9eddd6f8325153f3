#include "framework/train/schedule_spec.h"

#include "absl/strings/str_cat.h"
#include "framework/interfaces/plugin_kinds.h"

namespace tvlab {
namespace {

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> OptionsOf(const LrSchedule& spec) {
  const PluginKind& kind = PluginKindById("schedule");
  auto prototype = kind.prototype(spec.plugin());
  if (!prototype.ok())
    return absl::Status(prototype.status().code(),
                        absl::StrCat(kind.name_path(), ": ", prototype.status().message()));
  return UnpackOptions(spec.options(), **prototype, spec.plugin(), kind.options_path());
}

}  // namespace

void ValidateScheduleSpec(const LrSchedule& spec, Problems* p) {
  const auto* r = spec.GetReflection();
  for (const char* old : {"kind", "warmup_steps", "min_lr_ratio"}) {
    if (r->HasField(spec, spec.GetDescriptor()->FindFieldByName(old)))
      p->Add(absl::StrCat("train.lr_schedule.", old, " is the old spelling of a schedule plugin's option and "
                          "could not be read into plugin \"", spec.plugin(), "\"; give the schedule as "
                          "train.lr_schedule { plugin options }"));
  }
  auto options = OptionsOf(spec);
  if (!options.ok()) {
    p->Add(options.status());
    return;
  }
  const PluginKind& kind = PluginKindById("schedule");
  absl::Status valid = kind.validate(spec.plugin(), **options, PluginValidationArgs{});
  if (!valid.ok()) p->Add(absl::StrCat(kind.options_path(), " (", spec.plugin(), "): ", valid.message()));
}

absl::StatusOr<std::unique_ptr<Schedule>> BuildSchedule(const LrSchedule& spec) {
  auto options = OptionsOf(spec);
  if (!options.ok()) return options.status();
  auto entry = ScheduleRegistry().Get(spec.plugin());
  if (!entry.ok()) return entry.status();
  return (*entry)->create(**options, ScheduleArgs{});
}

}  // namespace tvlab
