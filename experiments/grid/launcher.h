#ifndef TVLAB_EXPERIMENTS_GRID_LAUNCHER_H_
#define TVLAB_EXPERIMENTS_GRID_LAUNCHER_H_

// Who trains a grid's runs. The grid command plans the runs still to run
// (grid_plan.h) and hands them to one launcher:
//   local   child processes on this machine, --jobs at a time (grid_runner.h);
//           the runs have ended when Launch returns
//   slurm   one Slurm job array, a task per run, and a dependent job that
//           builds the report (slurm_launcher.h); Launch returns once both
//           are submitted
// Either way every run is the run binary on the run's directory, and the
// results table is built from the run directories alone, so it does not care
// who ran them. Launchers register by name (REGISTER_GRID_LAUNCHER); the
// command picks one with --launcher NAME.

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/grid_plan.h"
#include "experiments/spec/grid_loader.h"

namespace tvlab {

// --slurm_* flags (docs/grids.md, "On a Slurm cluster").
struct SlurmOptions {
  std::string partition;           // --slurm_partition; empty: the cluster's default
  std::string time;                // --slurm_time, per array task; empty: the partition's default
  int cpus_per_task = 0;           // --slurm_cpus_per_task; 0: the runs' largest runtime.threads
  std::vector<std::string> extra;  // --slurm_extra, split at spaces: more sbatch options
};

struct LauncherOptions {
  int jobs = 1;  // local: runs at once
  SlurmOptions slurm;
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

using LauncherFactory = std::function<absl::StatusOr<std::unique_ptr<Launcher>>(const LauncherOptions&)>;

// The launcher registered as `name`; NotFound listing the registered names.
absl::StatusOr<std::unique_ptr<Launcher>> CreateLauncher(const std::string& name, const LauncherOptions& options);
std::vector<std::string> RegisteredLaunchers();

namespace internal {
struct LauncherRegistrar {
  LauncherRegistrar(const char* name, LauncherFactory factory);
};
}  // namespace internal

#define REGISTER_GRID_LAUNCHER(name, factory) \
  static ::tvlab::internal::LauncherRegistrar launcher_registrar_##factory(name, factory)

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_LAUNCHER_H_
