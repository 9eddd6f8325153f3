#ifndef TVLAB_EXPERIMENTS_GRID_GRID_RUNNER_H_
#define TVLAB_EXPERIMENTS_GRID_GRID_RUNNER_H_

// Trains the planned runs of a grid, up to `jobs` at a time, each in its own
// process: the run binary on the run's resolved spec (or --resume on its run
// directory), so a crashing run cannot take the grid down and every run
// directory is exactly what a single `run` would leave. Per run directory it
// adds:
//   cell_spec.pbtxt   the resolved spec the process was started on
//   grid_run.pbtxt    GridRunRecord: cell label, seed, overrides
//   run.log           the process's stdout and stderr
//   failed.txt        on failure: exit status and the error lines
// A progress display on `progress` shows runs done/total, each running
// run's step and an ETA; on a terminal it redraws one status line.

#include <ostream>
#include <string>

#include "experiments/grid/grid_plan.h"

namespace tvlab {

struct GridRunnerOptions {
  std::string run_binary;  // absolute path of //experiments:run
  int jobs = 1;
  std::ostream* progress = nullptr;
  bool interactive = false;     // redraw a status line ('\r') instead of logging it
  double status_every_s = 30;   // non-interactive: a status line this often
};

struct GridRunSummary {
  int succeeded = 0;
  int failed = 0;
  bool interrupted = false;  // SIGINT/SIGTERM: children were stopped
};

// Runs `plan.to_run`. Returns when all have ended, or after SIGINT/SIGTERM
// (then the runs in flight are stopped and restart next time).
GridRunSummary RunGrid(const GridPlan& plan, const GridRunnerOptions& options);

// "1h02m", "3m05s", "42s".
std::string FormatDuration(double seconds);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_GRID_RUNNER_H_
