// --launcher slurm's flags and its registration (launcher.h): the only place
// the grid command's Slurm options are defined and read.

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "experiments/grid/slurm/slurm_launcher.h"
#include "framework/core/status_macros.h"

ABSL_FLAG(std::string, slurm_partition, "", "P: --launcher slurm: the partition (default: the cluster's)");
ABSL_FLAG(std::string, slurm_time, "",
          "T: --launcher slurm: time limit per run, e.g. 1:00:00 (default: the partition's)");
ABSL_FLAG(int, slurm_cpus_per_task, 0,
          "K: --launcher slurm: CPUs per run (default: the largest runtime.threads of the runs)");
ABSL_FLAG(std::string, slurm_extra, "",
          "\"OPTS\": --launcher slurm: more sbatch options, split at spaces, e.g. "
          "--slurm_extra=\"--account=lab --qos=short\"");

ABSL_FLAG(double, slurm_command_timeout, 60,
          "SECONDS: --launcher slurm: how long sbatch, squeue, scontrol or scancel may take before the grid "
          "kills it and stops with an error (a stuck controller)");

namespace tvlab {
namespace {

absl::StatusOr<LauncherFactory> ReadSlurmFlags(const CommandLine& line) {
  if (line.Given().count("--jobs") > 0)
    return absl::InvalidArgumentError(
        "--jobs is for --launcher local; with --launcher slurm every run is an array task and the cluster "
        "decides how many run at once");
  SlurmOptions options;
  options.partition = absl::GetFlag(FLAGS_slurm_partition);
  options.time = absl::GetFlag(FLAGS_slurm_time);
  options.cpus_per_task = absl::GetFlag(FLAGS_slurm_cpus_per_task);
  options.extra = absl::StrSplit(absl::GetFlag(FLAGS_slurm_extra), ' ', absl::SkipWhitespace());
  const double timeout = absl::GetFlag(FLAGS_slurm_command_timeout);
  if (!(timeout > 0) || timeout > 86400) {
    return absl::InvalidArgumentError(absl::StrCat("--slurm_command_timeout: ", timeout,
                                                   " is not a number of seconds in (0, 86400]; e.g. 60"));
  }
  options.command_timeout = absl::Seconds(timeout);
  TVLAB_RETURN_IF_ERROR(CheckSlurmOptions(options));
  return LauncherFactory([options](const LauncherContext& context) { return NewSlurmLauncher(options, context); });
}

LauncherKind SlurmKind() {
  LauncherKind kind;
  kind.name = "slurm";
  kind.flags = {"--slurm_partition", "--slurm_time", "--slurm_cpus_per_task", "--slurm_extra",
                "--slurm_command_timeout"};
  kind.synopsis = {"[--slurm_partition P]", "[--slurm_time T]", "[--slurm_cpus_per_task K]",
                   "[--slurm_extra \"OPTS\"]", "[--slurm_command_timeout SECONDS]"};
  kind.summary = "the grid as a Slurm job array";
  kind.read_flags = ReadSlurmFlags;
  kind.check_none_in_flight = CheckNoSlurmJobsQueued;
  return kind;
}

}  // namespace

absl::Status CheckSlurmOptions(const SlurmOptions& options) {
  if (options.cpus_per_task < 0)
    return absl::InvalidArgumentError(absl::StrCat("--slurm_cpus_per_task: ", options.cpus_per_task,
                                                   " is not a number of CPUs >= 1 (0: the runs' runtime.threads)"));
  return ValidateSlurmTime(options.time);
}

absl::Status ValidateSlurmTime(const std::string& time) {
  if (time.empty() || time == "UNLIMITED" || time == "INFINITE") return absl::OkStatus();
  absl::string_view rest = time;
  bool days = false;
  if (size_t dash = rest.find('-'); dash != absl::string_view::npos) {
    int d;
    days = absl::SimpleAtoi(rest.substr(0, dash), &d) && d >= 0;
    if (!days) rest = "";  // reported below
    else rest = rest.substr(dash + 1);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(rest, ':');
  bool ok = !rest.empty() && parts.size() <= 3;
  for (absl::string_view part : parts) {
    int value;
    ok = ok && !part.empty() && absl::SimpleAtoi(part, &value) && value >= 0;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--slurm_time: '", time, "' is not a Slurm time limit; write MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
      "D-HH:MM:SS (e.g. --slurm_time 1:00:00 for one hour per run)"));
}

REGISTER_GRID_LAUNCHER(SlurmKind);

}  // namespace tvlab
