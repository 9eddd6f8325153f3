#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_HYPOTHESIS_REPORT_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_HYPOTHESIS_REPORT_H_

// The grid's pre-registered hypotheses (grid.proto's `hypothesis`), tested
// exactly as declared: Welch's t-test, or the paired t-test over the seeds
// both cells finished (test: PAIRED_BY_SEED), one- or two-sided, Holm's
// correction within each declared family at the family's alpha; the effect
// size (Cohen's d with the pooled std, or d_z of the paired differences);
// and the power analysis: power at the declared smallest effect with the
// seeds run, the minimum detectable effect at those seeds, and the seeds per
// cell needed for 80% power at the smallest effect. An EQUIVALENT
// hypothesis is tested by TOST against the margin smallest_effect, its power
// that of showing equivalence when the true difference is 0. Power is computed at
// alpha / m (m = the family's size), the level Holm's first step needs, so
// it is a lower bound on the power under Holm (framework/report/power.h).

#include <optional>
#include <string>
#include <vector>

#include "experiments/grid/report/grid_results.h"
#include "framework/report/power.h"

namespace tvlab {

// The power every hypothesis is planned for.
inline constexpr double kPlannedPower = 0.8;

struct HypothesisOutcome {
  const GridHypothesis* hypothesis = nullptr;
  int n_a = 0, n_b = 0;  // finished seeds (paired: both equal the pairs)
  double delta = 0;      // mean(A) - mean(B) (paired: mean of the differences)
  bool defined = false;  // the test could run
  std::string why_undefined;
  // Two-sided (1 - alpha) CI of delta; (1 - 2 alpha) for EQUIVALENT, the
  // interval TOST at alpha checks against the margin.
  double ci_low = 0, ci_high = 0;
  double standard_error = 0;
  // p under the declared sidedness and direction; for EQUIVALENT, TOST's p
  // and the t of its binding side.
  double df = 0, t = 0, p = 1;
  double sd = 0;                   // pooled std, or std of the paired differences
  double effect_size = 0;          // delta / sd: Cohen's d, or d_z when paired
  int family_size = 0;
  double holm_p = 1;
  bool rejected = false;  // holm_p < alpha
  // Power at alpha / family_size.
  double power_at_smallest = 0;              // at |smallest_effect| with min(n_a, n_b) seeds
  double minimum_detectable = 0;             // in the metric's units, at min(n_a, n_b) seeds
  std::optional<int> seeds_needed;           // per cell, for kPlannedPower at smallest_effect
  // "supported", "not supported", "opposite sign" (a two-sided rejection
  // against the declared direction) or "untested".
  std::string verdict;
};

// The design hypothesis `h` is planned with: its test, sidedness, TOST for
// EQUIVALENT, at alpha / family_size.
PowerDesign PlannedDesign(const GridHypothesis& h, int family_size);

// One outcome per grid hypothesis, in spec order.
std::vector<HypothesisOutcome> TestHypotheses(const GridResults& results);

// Per-seed values of `metric` of `cell`, seed -> value, over finished seeds
// that did not diverge.
std::vector<std::pair<uint64_t, double>> SeedValues(const CellOutcome& cell, const std::string& metric);

// hypotheses.csv: one row per hypothesis (docs/grids.md lists the columns).
std::string HypothesesCsv(const GridResults& results, const std::vector<HypothesisOutcome>& outcomes);
// The "Pre-registered hypotheses" section of results.md; "" without any.
std::string HypothesesMarkdown(const GridResults& results, const std::vector<HypothesisOutcome>& outcomes);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_HYPOTHESIS_REPORT_H_
