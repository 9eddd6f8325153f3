#include "experiments/grid/report/seeds_for_power.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/grid/report/hypothesis_report.h"
#include "framework/report/power.h"

namespace tvlab {

absl::StatusOr<SeedsForPowerPlan> PlanSeedsForPower(const GridResults& pilot, int pilot_seeds, double power,
                                                    int64_t max_runs) {
  int valid_cells = 0;
  for (const GridCell& c : pilot.grid->cells) valid_cells += c.valid();
  const int max_seeds = static_cast<int>(std::min<int64_t>(max_runs / std::max(1, valid_cells), 1 << 30));
  SeedsForPowerPlan plan;
  plan.seeds_per_cell = pilot_seeds;
  for (const HypothesisOutcome& o : TestHypotheses(pilot)) {
    const Hypothesis& h = o.hypothesis->spec;
    if (!o.defined || !(o.sd > 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "seeds_for_power: hypothesis '", h.name(), "' could not be tested on the pilot's seeds (",
          o.why_undefined.empty() ? "no seed variance" : o.why_undefined,
          "), so the pilot gives no variance to plan with; fix the failed runs or declare more pilot_seeds"));
    }
    const PowerDesign design = PlannedDesign(*o.hypothesis, o.family_size);
    const double d = h.smallest_effect() / o.sd;
    const std::optional<int> needed = SeedsNeeded(d, design, power, max_seeds);
    const std::string why = absl::StrFormat(
        "'%s': smallest_effect %g / pilot std %.4g = d %.3g, alpha %g / %d", h.name(), h.smallest_effect(), o.sd,
        d, h.alpha(), o.family_size);
    if (!needed) {
      return absl::FailedPreconditionError(absl::StrCat(
          "seeds_for_power: hypothesis ", why, " needs more than ", max_seeds, " seeds per cell for ",
          absl::StrFormat("%g", power), " power, and ", valid_cells, " valid cells x ", max_seeds + 1,
          " seeds exceed max_runs ", max_runs, "; raise max_runs or declare a larger smallest_effect"));
    }
    plan.lines.push_back(absl::StrCat(why, ": ", *needed, " seeds per cell"));
    plan.seeds_per_cell = std::max(plan.seeds_per_cell, *needed);
  }
  return plan;
}

}  // namespace tvlab
