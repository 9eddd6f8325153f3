#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_SEEDS_FOR_POWER_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_SEEDS_FOR_POWER_H_

// "Enough seeds for the declared power": from a pilot (the grid's
// hypotheses tested on the seeds run so far), the seeds per cell each
// hypothesis needs to reach `power` at its smallest effect, at alpha / m as
// in hypothesis_report.h, with the pilot's seed std (pooled, or of the
// paired differences). The grid then runs the largest of them (at most
// `max_seeds`) in every cell, or with `cells: HYPOTHESIS_CELLS` in the
// cells the hypotheses name (the others keep the pilot's seeds).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/report/grid_results.h"
#include "framework/schema/grid.pb.h"

namespace tvlab {

struct SeedsForPowerPlan {
  int seeds_per_cell = 0;          // >= the pilot's seeds, for the cells below
  std::vector<int> grown_cells;    // indices into grid->cells: valid cells that get seeds_per_cell
  std::vector<std::string> lines;  // per hypothesis: what it needs and why
};

// Errors: a hypothesis the pilot could not test (its reason), or one whose
// seeds, run in the grown cells beside the pilot's in the rest, exceed
// `max_runs` (the numbers, and the fixes: raise max_runs, declare a larger
// smallest_effect, or cap the seeds with max_seeds). A need beyond
// options.max_seeds is no error: it is capped there and its line says so.
// REQUIRES: 0 < options.power() < 1, options.pilot_seeds() >= 2,
// options.max_seeds() is 0 or > pilot_seeds.
absl::StatusOr<SeedsForPowerPlan> PlanSeedsForPower(const GridResults& pilot, const SeedsForPower& options,
                                                    int64_t max_runs);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_SEEDS_FOR_POWER_H_
