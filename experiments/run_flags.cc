#include "experiments/run_flags.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "experiments/cli/command_line.h"
#include "experiments/grid/expand/grid_loader.h"
#include "framework/data/text_file.h"
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
          "spec.resolved.pbtxt is used; --set may change train.steps and train.lr_schedule.options.* "
          "when the steps taken keep their rates: a WSD stable phase into another decay)");
ABSL_FLAG(std::string, init_from, "",
          "PATH: start from these weights (run dir, checkpoint dir, .safetensors, or a Hugging "
          "Face Llama/GPT-2 directory of the same shape: docs/interop.md)");
ABSL_FLAG(bool, eval_only, false, "evaluate the --init_from weights without training");
ABSL_FLAG(bool, list_plugins, false, "print the registered plugins by kind");
ABSL_FLAG(double, collective_timeout, tvlab::Communicator::kDefaultCollectiveTimeout,
          "SECONDS: under mpirun, how long a rank waits in a collective (all-reduce) for the other "
          "ranks before the job is stopped as hung, naming the rank(s) that did not arrive "
          "(docs/distributed.md)");
// A grid (docs/grids.md); each launcher defines its own flags beside it
// (experiments/grid/launcher.h).
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
ABSL_FLAG(std::string, run_key, "",
          "KEY: grid only: train just this run of the grid (what each Slurm array task runs)");

namespace tvlab {
namespace {

constexpr const char* kGridFlags[] = {"--report_only", "--dry_run", "--retry_failed", "--launcher", "--run_key"};
constexpr const char* kRunOnly[] = {"--set", "--resume", "--init_from", "--eval_only",
                                    "--list_plugins", "--collective_timeout"};

// The user's directory: where `bazel run` was started, else this process's.
std::string WorkingDir() {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (cwd != nullptr) return cwd;
  std::error_code error;  // a deleted working directory: relative paths stay relative
  const std::filesystem::path here = std::filesystem::current_path(error);
  return error ? "." : here.string();
}

// Absolute and normalised; the path as given if the working directory is gone.
std::string AbsolutePath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

// A regular file small enough to be a spec (not /dev/zero, which never
// ends) that holds a grid spec.
bool IsGridFile(const std::string& path) {
  if (!CheckTextFile(path, "grid file").ok()) return false;
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  return LooksLikeGridSpec(text.str());
}

bool IsGridCommand(const std::vector<std::string>& positional) {
  for (const std::string& a : positional)
    if (IsGridFile(UserPath(a))) return true;
  return false;
}

absl::StatusOr<TrainFlags> ReadTrainFlags(const CommandLine& line) {
  TrainFlags flags;
  if (line.positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", line.positional[1], "': only one spec file per run"));
  }
  std::vector<std::string> grid_only = AllLauncherFlags();
  grid_only.insert(grid_only.end(), std::begin(kGridFlags), std::end(kGridFlags));
  for (const std::string& given : line.Given()) {
    if (std::find(grid_only.begin(), grid_only.end(), given) != grid_only.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(given, " is a grid flag, and no grid spec was given (docs/grids.md)"));
    }
  }
  if (!line.positional.empty()) flags.spec_path = UserPath(line.positional[0]);
  // absl keeps the last --set only; overrides apply in order.
  if (line.Has("set")) flags.overrides = line.values.at("set");
  flags.output_dir = UserPath(absl::GetFlag(FLAGS_output_dir));
  flags.runs_root = UserPath("runs");
  flags.resume_dir = UserPath(absl::GetFlag(FLAGS_resume));
  flags.init_from = UserPath(absl::GetFlag(FLAGS_init_from));
  flags.eval_only = absl::GetFlag(FLAGS_eval_only);
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
    // --set on --resume: train.steps and the schedule's options only, checked
    // against the checkpoint (framework/train/schedule_resume.h).
    if (!flags.init_from.empty() || flags.eval_only)
      return absl::InvalidArgumentError("--resume cannot be combined with --init_from or --eval_only");
  } else if (!absl::GetFlag(FLAGS_list_plugins) && flags.spec_path.empty()) {
    return absl::InvalidArgumentError("no spec file given");
  }
  if (flags.eval_only && flags.init_from.empty())
    return absl::InvalidArgumentError("--eval_only needs --init_from with the weights to evaluate");
  return flags;
}

absl::StatusOr<GridFlags> ReadGridFlags(const CommandLine& line) {
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
  // Absolute, so every path derived from them (output and run directories)
  // means the same to the run processes.
  flags.grid_path = AbsolutePath(UserPath(line.positional[0]));
  const std::string output_dir = absl::GetFlag(FLAGS_output_dir);
  if (!output_dir.empty()) flags.output_dir = AbsolutePath(UserPath(output_dir));
  flags.working_dir = WorkingDir();
  flags.report_only = absl::GetFlag(FLAGS_report_only);
  flags.dry_run = absl::GetFlag(FLAGS_dry_run);
  flags.retry_failed = absl::GetFlag(FLAGS_retry_failed);
  flags.run_key = absl::GetFlag(FLAGS_run_key);
  if (flags.report_only && flags.dry_run)
    return absl::InvalidArgumentError("--report_only and --dry_run exclude each other");
  auto launcher = ReadLauncherFlags(absl::GetFlag(FLAGS_launcher), line);
  if (!launcher.ok()) return launcher.status();
  flags.launcher = *std::move(launcher);
  bool launcher_flags = line.Given().count("--launcher") > 0;
  for (const std::string& flag : AllLauncherFlags()) launcher_flags |= line.Given().count(flag) > 0;
  if (!flags.run_key.empty() && (flags.report_only || flags.dry_run || flags.retry_failed || launcher_flags))
    return absl::InvalidArgumentError(
        "--run_key trains one run here and goes alone (with --output_dir at most); it is what each Slurm "
        "array task runs");
  return flags;
}

}  // namespace

std::string RunUsage() {
  return absl::StrCat(
      "usage: bazel run //experiments:run -- SPEC.pbtxt [--set field.path=value]... "
      "[--output_dir DIR]\n"
      "       bazel run //experiments:run -- --resume RUN_DIR [--set train.steps=N]...\n"
      "       bazel run //experiments:run -- --list_plugins\n"
      "       bazel run //experiments:run -- GRID.pbtxt [--output_dir DIR]\n"
      "           [--report_only] [--dry_run] [--retry_failed]  (an ablation grid, docs/grids.md)\n",
      LauncherUsage("           "),
      "  SPEC.pbtxt  experiment spec in protobuf text format (see configs/)\n"
      "  GRID.pbtxt  grid spec (framework/schema/grid.proto, docs/grids.md)\n"
      "Relative paths resolve against the directory you ran bazel from.\n");
}

absl::StatusOr<RunFlags> ParseRunFlags(int argc, char** argv, std::string* usage) {
  *usage = RunUsage();
  auto line = ParseFlags(argc, argv, *usage);
  if (!line.ok()) return line.status();
  RunFlags flags;
  if (line->help) {
    flags.command = RunFlags::Command::kHelp;
    return flags;
  }
  // A grid spec trains many runs, each by this same binary in its own process.
  if (IsGridCommand(line->positional)) {
    *usage = GridUsage();
    auto grid = ReadGridFlags(*line);
    if (!grid.ok()) return grid.status();
    flags.command = RunFlags::Command::kGrid;
    flags.grid = *std::move(grid);
    return flags;
  }
  auto train = ReadTrainFlags(*line);
  if (!train.ok()) return train.status();
  flags.command = absl::GetFlag(FLAGS_list_plugins) ? RunFlags::Command::kListPlugins : RunFlags::Command::kTrain;
  flags.train = *std::move(train);
  return flags;
}

}  // namespace tvlab
