#include "experiments/grid/report/seeds_for_power.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "experiments/grid/report/hypothesis_report.h"
#include "framework/report/power.h"

namespace tvlab {
namespace {

// The valid cells the plan's seeds go to: every one, or those a hypothesis
// names.
std::vector<int> GrownCells(const ExpandedGrid& grid, SeedsForPower::Cells which) {
  std::set<int> named;
  for (const GridHypothesis& h : grid.hypotheses) named.insert({h.cell_a, h.cell_b});
  std::vector<int> grown;
  for (int i = 0; i < static_cast<int>(grid.cells.size()); ++i)
    if (grid.cells[i].valid() && (which == SeedsForPower::EVERY_CELL || named.count(i))) grown.push_back(i);
  return grown;
}

// What a hypothesis that needs more than `cap` seeds gets at `cap`.
std::string CappedLine(double d, const PowerDesign& design, double power, double sd, int cap,
                       const std::optional<int>& needed) {
  return absl::StrFormat(
      "needs %s seeds per cell, more than max_seeds %d: planned at %d (power %.2f at the smallest effect, "
      "minimum detectable effect %.4g at %g power)",
      needed ? absl::StrCat(*needed) : "over 100000", cap, cap, TTestPower(d, cap, design),
      MinimumDetectableEffect(cap, design, power) * sd, power);
}

}  // namespace

absl::StatusOr<SeedsForPowerPlan> PlanSeedsForPower(const GridResults& pilot, const SeedsForPower& options,
                                                    int64_t max_runs) {
  const int pilot_seeds = options.pilot_seeds();
  SeedsForPowerPlan plan;
  plan.seeds_per_cell = pilot_seeds;
  plan.grown_cells = GrownCells(*pilot.grid, options.cells());
  int valid_cells = 0;
  for (const GridCell& c : pilot.grid->cells) valid_cells += c.valid();
  const int grown = std::max<int>(1, plan.grown_cells.size());
  const int64_t kept_runs = static_cast<int64_t>(pilot_seeds) * (valid_cells - plan.grown_cells.size());
  const int by_runs = static_cast<int>(std::min<int64_t>((max_runs - kept_runs) / grown, 1 << 30));
  const int cap = options.max_seeds() > 0 ? std::min(options.max_seeds(), by_runs) : by_runs;
  const bool capped_by_option = options.max_seeds() > 0 && options.max_seeds() <= by_runs;
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
    const std::string why = absl::StrFormat(
        "'%s': smallest_effect %g / pilot std %.4g = d %.3g, alpha %g / %d", h.name(), h.smallest_effect(), o.sd,
        d, h.alpha(), o.family_size);
    const std::optional<int> needed = SeedsNeeded(d, design, options.power());
    if (needed && *needed <= cap) {
      plan.lines.push_back(absl::StrCat(why, ": ", *needed, " seeds per cell"));
      plan.seeds_per_cell = std::max(plan.seeds_per_cell, *needed);
    } else if (capped_by_option) {
      plan.lines.push_back(absl::StrCat(why, ": ", CappedLine(d, design, options.power(), o.sd, cap, needed)));
      plan.seeds_per_cell = std::max(plan.seeds_per_cell, cap);
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          "seeds_for_power: hypothesis ", why, " needs more than ", cap, " seeds per cell for ",
          absl::StrFormat("%g", options.power()), " power, and ", plan.grown_cells.size(),
          options.cells() == SeedsForPower::EVERY_CELL ? " valid cells x " : " hypothesis cells x ", cap + 1,
          " seeds", kept_runs > 0 ? absl::StrCat(" + ", kept_runs, " pilot runs in the other cells") : "",
          " exceed max_runs ", max_runs,
          "; raise max_runs, declare a larger smallest_effect, or cap the seeds with max_seeds"));
    }
  }
  return plan;
}

}  // namespace tvlab
