#include "experiments/run_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "framework/distributed/communicator.h"

// A single run.
ABSL_FLAG(std::string, set, "",
          "FIELD=VALUE: override one spec field, e.g. --set model.num_heads=8 (repeatable; "
          "applied in order)");
ABSL_FLAG(std::string, output_dir, "",
          "DIR: the run directory (default runs/<name>/<timestamp>); for a grid, where its run "
          "directories go (default: the grid's output_dir, else runs/<grid name>)");
ABSL_FLAG(std::string, resume, "",
          "RUN_DIR: continue an interrupted run from its latest checkpoint (no SPEC: the run's "
          "spec.resolved.pbtxt is used)");
ABSL_FLAG(std::string, init_from, "",
          "PATH: start from these weights (run dir, checkpoint dir, .safetensors, or a Hugging "
          "Face Llama/GPT-2 directory of the same shape: docs/interop.md)");
ABSL_FLAG(bool, eval_only, false, "evaluate the --init_from weights without training");
ABSL_FLAG(bool, list_plugins, false, "print the registered plugins by kind");
ABSL_FLAG(double, collective_timeout, tvlab::Communicator::kDefaultCollectiveTimeout,
          "SECONDS: under mpirun, how long a rank waits in a collective (all-reduce) for the other "
          "ranks before the job is stopped as hung, naming the rank(s) that did not arrive "
          "(docs/distributed.md)");
// A grid (docs/grids.md).
ABSL_FLAG(int, jobs, 1, "N: grid only: runs trained at once, each in its own process (default 1)");
ABSL_FLAG(bool, report_only, false,
          "grid only: rebuild results.csv, results.md and the plots from the run directories; "
          "train nothing");
ABSL_FLAG(bool, dry_run, false,
          "grid only: list the cells, their validity and what would run; train nothing");
ABSL_FLAG(bool, retry_failed, false,
          "grid only: run again the runs that failed before (default: keep them)");
ABSL_FLAG(std::string, launcher, "local",
          "NAME: grid only: who trains the runs: local (child processes, --jobs at a time) or slurm "
          "(one Slurm job array, a task per run, and a dependent report job; docs/grids.md)");
ABSL_FLAG(std::string, slurm_partition, "", "P: --launcher slurm: the partition (default: the cluster's)");
ABSL_FLAG(std::string, slurm_time, "",
          "T: --launcher slurm: time limit per run, e.g. 1:00:00 (default: the partition's)");
ABSL_FLAG(int, slurm_cpus_per_task, 0,
          "K: --launcher slurm: CPUs per run (default: the largest runtime.threads of the runs)");
ABSL_FLAG(std::string, slurm_extra, "",
          "\"OPTS\": --launcher slurm: more sbatch options, split at spaces, e.g. "
          "--slurm_extra=\"--account=lab --qos=short\"");
ABSL_FLAG(std::string, run_key, "",
          "KEY: grid only: train just this run of the grid (what each Slurm array task runs)");

namespace tvlab {

const char kRunUsage[] =
    "usage: bazel run //experiments:run -- SPEC.pbtxt [--set field.path=value]... "
    "[--output_dir DIR]\n"
    "       bazel run //experiments:run -- --resume RUN_DIR\n"
    "       bazel run //experiments:run -- --list_plugins\n"
    "       bazel run //experiments:run -- GRID.pbtxt [--jobs N] [--output_dir DIR]\n"
    "           [--report_only] [--dry_run] [--retry_failed]  (an ablation grid, docs/grids.md)\n"
    "           [--launcher slurm [--slurm_partition P] [--slurm_time T] [--slurm_cpus_per_task K]\n"
    "            [--slurm_extra \"OPTS\"]]  (the grid as a Slurm job array)\n"
    "  SPEC.pbtxt  experiment spec in protobuf text format (see configs/)\n"
    "  GRID.pbtxt  grid spec (framework/schema/grid.proto, docs/grids.md)\n"
    "Relative paths resolve against the directory you ran bazel from.\n";

namespace {

constexpr const char* kGridOnly[] = {"--jobs",       "--report_only",         "--dry_run",     "--retry_failed",
                                     "--launcher",   "--slurm_partition",     "--slurm_time",  "--slurm_cpus_per_task",
                                     "--slurm_extra", "--run_key"};
constexpr const char* kSlurmOnly[] = {"--slurm_partition", "--slurm_time", "--slurm_cpus_per_task",
                                      "--slurm_extra"};
constexpr const char* kRunOnly[] = {"--set", "--resume", "--init_from", "--eval_only",
                                    "--list_plugins", "--collective_timeout"};

}  // namespace

absl::StatusOr<RunFlags> RunFlagsFrom(const CommandLine& line) {
  RunFlags flags;
  if (line.positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", line.positional[1], "': only one spec file per run"));
  }
  for (const char* grid_flag : kGridOnly) {
    if (line.Given().count(grid_flag) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(grid_flag, " is a grid flag, and no grid spec was given (docs/grids.md)"));
    }
  }
  if (!line.positional.empty()) flags.spec_path = line.positional[0];
  // absl keeps the last --set only; overrides apply in order.
  if (line.Has("set")) flags.overrides = line.values.at("set");
  flags.output_dir = absl::GetFlag(FLAGS_output_dir);
  flags.resume_dir = absl::GetFlag(FLAGS_resume);
  flags.init_from = absl::GetFlag(FLAGS_init_from);
  flags.eval_only = absl::GetFlag(FLAGS_eval_only);
  flags.list_plugins = absl::GetFlag(FLAGS_list_plugins);
  flags.collective_timeout = absl::GetFlag(FLAGS_collective_timeout);
  if (!(flags.collective_timeout > 0 && flags.collective_timeout <= 7 * 24 * 3600)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--collective_timeout: ", flags.collective_timeout,
        " is not a number of seconds in (0, 604800]; e.g. --collective_timeout 600 (the default)"));
  }

  if (!flags.resume_dir.empty()) {
    if (!flags.spec_path.empty())
      return absl::InvalidArgumentError(
          "--resume takes its spec from the run directory; drop the spec file argument");
    if (!flags.overrides.empty() || !flags.init_from.empty() || flags.eval_only)
      return absl::InvalidArgumentError("--resume cannot be combined with --set, --init_from or --eval_only");
  } else if (!flags.list_plugins && flags.spec_path.empty()) {
    return absl::InvalidArgumentError("no spec file given");
  }
  if (flags.eval_only && flags.init_from.empty())
    return absl::InvalidArgumentError("--eval_only needs --init_from with the weights to evaluate");
  return flags;
}

absl::StatusOr<GridFlags> GridFlagsFrom(const CommandLine& line) {
  GridFlags flags;
  if (line.positional.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", line.positional[1], "': one grid file at a time"));
  }
  for (const char* run_flag : kRunOnly) {
    if (line.Given().count(run_flag) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag '", run_flag, "' for a grid",
          std::string(run_flag) == "--set" ? "; put overrides in the grid's `set` list" : ""));
    }
  }
  flags.grid_path = line.positional[0];
  flags.output_dir = absl::GetFlag(FLAGS_output_dir);
  flags.jobs = absl::GetFlag(FLAGS_jobs);
  flags.report_only = absl::GetFlag(FLAGS_report_only);
  flags.dry_run = absl::GetFlag(FLAGS_dry_run);
  flags.retry_failed = absl::GetFlag(FLAGS_retry_failed);
  if (flags.jobs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--jobs: '", flags.jobs, "' is not a number of processes >= 1"));
  }
  if (flags.report_only && flags.dry_run)
    return absl::InvalidArgumentError("--report_only and --dry_run exclude each other");
  flags.launcher = absl::GetFlag(FLAGS_launcher);
  flags.slurm.partition = absl::GetFlag(FLAGS_slurm_partition);
  flags.slurm.time = absl::GetFlag(FLAGS_slurm_time);
  flags.slurm.cpus_per_task = absl::GetFlag(FLAGS_slurm_cpus_per_task);
  flags.slurm.extra = absl::StrSplit(absl::GetFlag(FLAGS_slurm_extra), ' ', absl::SkipWhitespace());
  flags.run_key = absl::GetFlag(FLAGS_run_key);
  if (flags.launcher != "slurm") {
    for (const char* slurm_flag : kSlurmOnly) {
      if (line.Given().count(slurm_flag) > 0)
        return absl::InvalidArgumentError(absl::StrCat(slurm_flag, " is for --launcher slurm (the launcher is '",
                                                       flags.launcher, "')"));
    }
  }
  if (flags.launcher == "slurm" && line.Given().count("--jobs") > 0)
    return absl::InvalidArgumentError(
        "--jobs is for --launcher local; with --launcher slurm every run is an array task and the cluster "
        "decides how many run at once");
  if (!flags.run_key.empty() && (flags.report_only || flags.dry_run || flags.retry_failed ||
                                 line.Given().count("--launcher") > 0 || line.Given().count("--jobs") > 0))
    return absl::InvalidArgumentError(
        "--run_key trains one run here and goes alone (with --output_dir at most); it is what each Slurm "
        "array task runs");
  return flags;
}

}  // namespace tvlab
