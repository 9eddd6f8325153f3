#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_SEEDS_FOR_POWER_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_SEEDS_FOR_POWER_H_

// "Enough seeds for the declared power": from a pilot (the grid's
// hypotheses tested on the seeds run so far), the seeds per cell each
// hypothesis needs to reach `power` at its smallest effect, at alpha / m as
// in hypothesis_report.h, with the pilot's seed std (pooled, or of the
// paired differences). The grid then runs the largest of them in every
// cell.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/report/grid_results.h"

namespace tvlab {

struct SeedsForPowerPlan {
  int seeds_per_cell = 0;          // >= the pilot's seeds
  std::vector<std::string> lines;  // per hypothesis: what it needs and why
};

// Errors: a hypothesis the pilot could not test (its reason), or one whose
// seeds times the grid's valid cells exceed `max_runs` (the numbers, and
// the two fixes: raise max_runs or declare a larger smallest_effect).
// REQUIRES: 0 < power < 1, pilot_seeds >= 2.
absl::StatusOr<SeedsForPowerPlan> PlanSeedsForPower(const GridResults& pilot, int pilot_seeds, double power,
                                                    int64_t max_runs);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_SEEDS_FOR_POWER_H_
