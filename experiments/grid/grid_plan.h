#ifndef TVLAB_EXPERIMENTS_GRID_GRID_PLAN_H_
#define TVLAB_EXPERIMENTS_GRID_GRID_PLAN_H_

// Which runs of a grid still need training, from the run directories:
//   metrics.json present          finished: never run again
//   failed.txt present            failed earlier: kept (and reported) unless
//                                 retry_failed
//   neither                       not run, or in flight when the grid was
//                                 interrupted: run it, resuming from its
//                                 latest checkpoint when it has one
// A grid extended with new values therefore runs only the new cells.

#include <string>
#include <vector>

#include "experiments/grid/expand/grid_loader.h"

namespace tvlab {

struct PlannedRun {
  const GridCell* cell = nullptr;
  const GridRun* run = nullptr;
  bool resume = false;  // a complete checkpoint exists: --resume the run dir
  bool retry = false;   // failed before; its failed.txt goes when it restarts
};

struct GridPlan {
  std::vector<PlannedRun> to_run;  // in grid order
  int total = 0;                   // runs of valid cells
  int finished = 0;
  int failed_kept = 0;  // failed earlier and not retried
};

GridPlan PlanGrid(const ExpandedGrid& grid, bool retry_failed);

// "24 runs: 10 finished (skipped), 1 failed earlier (kept; --retry_failed
// reruns it), 13 to run (2 resume from a checkpoint)".
std::string DescribePlan(const GridPlan& plan);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_GRID_PLAN_H_
