#ifndef TVLAB_EXPERIMENTS_GRID_LAUNCHER_H_
#define TVLAB_EXPERIMENTS_GRID_LAUNCHER_H_

// Who trains a grid's runs. The grid command plans the runs still to run
// (grid_plan.h) and hands them to one launcher, chosen with --launcher NAME:
//   local   child processes on this machine, --jobs at a time
//           (local_launcher.cc, grid_runner.h); the runs have ended when
//           Launch returns
//   slurm   one Slurm job array, a task per run, and a dependent job that
//           builds the report (slurm/slurm_launcher.h); Launch returns once
//           both are submitted
// Either way every run is the run binary on the run's directory, and the
// results table is built from the run directories alone, so it does not care
// who ran them.
//
// A launcher registers a LauncherKind (REGISTER_GRID_LAUNCHER) beside its
// code, with its own flags (ABSL_FLAG in its own files): the command line
// knows launchers only through this registry.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/cli/command_line.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/grid_plan.h"

namespace tvlab {

// Where a launcher reports progress.
struct LauncherContext {
  std::ostream* progress = nullptr;  // events and the status line
  bool interactive = false;          // progress is a terminal
};

// What one grid invocation hands its launcher.
struct LaunchRequest {
  const ExpandedGrid* grid = nullptr;
  const GridPlan* plan = nullptr;  // plan->to_run: the runs to train now
  std::string grid_path;           // absolute
  std::string run_binary;          // absolute path of //experiments:run
};

struct LaunchOutcome {
  // kEnded: every planned run has ended (finished or failed): report now.
  // kSubmitted: the runs were handed to a scheduler; a job of its own builds
  //   the report when they end.
  // kInterrupted: SIGINT/SIGTERM; runs in flight were stopped.
  enum class State { kEnded, kSubmitted, kInterrupted };
  State state = State::kEnded;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // Trains (or submits) request.plan->to_run. An error means nothing was
  // started: the message says what was wrong and how to fix it. A failed run
  // is not an error: its directory says it failed (failed.txt).
  virtual absl::StatusOr<LaunchOutcome> Launch(const LaunchRequest& request) = 0;
};

// A launcher with its flags read and checked: creating it cannot fail.
using LauncherFactory = std::function<std::unique_ptr<Launcher>(const LauncherContext&)>;

// One registered launcher.
struct LauncherKind {
  std::string name;  // what --launcher takes
  // Its own flags, as typed ("--slurm_time"): given with another launcher
  // they are an error naming this one.
  std::vector<std::string> flags;
  // Its flags for the usage text, e.g. {"[--slurm_time T]", ...}, and what it does.
  std::vector<std::string> synopsis;
  std::string summary;
  // Reads its flags from the parsed command line (the absl flags are set)
  // and checks them, and the grid flags it cannot take; InvalidArgument
  // naming the flag.
  std::function<absl::StatusOr<LauncherFactory>(const CommandLine& line)> read_flags;
  // Optional: FailedPrecondition when an earlier submission through this
  // launcher could still train runs of the grid in `output_dir` (so no
  // launcher may start them again).
  std::function<absl::Status(const std::string& output_dir)> check_none_in_flight;
};

// The launcher `name` with its flags read from `line`, once the other
// launchers' flags are known not to be given. Errors (InvalidArgument, for
// a usage error): no launcher of that name (listing them), the launcher's
// own flag errors, a flag of another launcher.
absl::StatusOr<LauncherFactory> ReadLauncherFlags(const std::string& name, const CommandLine& line);

// Every registered launcher's own flags, sorted.
std::vector<std::string> AllLauncherFlags();

// OK unless a launcher says an earlier submission may still train runs in
// `output_dir`.
absl::Status CheckNoLauncherJobsInFlight(const std::string& output_dir);

// Usage lines per launcher, "<indent>[--launcher NAME SYNOPSIS]  (SUMMARY)",
// wrapped at 100 columns.
std::string LauncherUsage(const std::string& indent);

// The names, sorted.
std::vector<std::string> RegisteredLaunchers();

namespace internal {
struct LauncherRegistrar {
  explicit LauncherRegistrar(LauncherKind kind);
};
}  // namespace internal

// REGISTER_GRID_LAUNCHER(MakeSlurmKind): a function returning the LauncherKind.
#define REGISTER_GRID_LAUNCHER(make_kind) \
  static ::tvlab::internal::LauncherRegistrar launcher_registrar_##make_kind(make_kind())

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_LAUNCHER_H_
