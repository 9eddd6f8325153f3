#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_BASELINE_COMPARISON_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_BASELINE_COMPARISON_H_

// Each cell of a grid against its baseline on one metric, over seeds:
// Welch's t-test (95% CI of the delta, p-value), a percentile bootstrap CI
// when both have >= 5 seeds, and Holm's correction over the cells compared
// (framework/report/significance.h). A cell is marked significant when its
// Holm-adjusted p is below 0.05. Cells whose test is undefined (fewer than 2
// seeds, no variance at all) are left out of the Holm family and say why.

#include <optional>
#include <string>
#include <vector>

#include "experiments/grid/report/grid_results.h"
#include "framework/report/significance.h"

namespace tvlab {

struct BaselineComparison {
  WelchResult welch;
  std::optional<BootstrapCi> bootstrap;  // both groups have >= kMinSeedsForBootstrap
  std::optional<double> holm_p;          // when welch.defined
  bool significant = false;              // holm_p < alpha
  bool few_seeds = false;                // a group has < kMinSeedsForSignificance
};

struct GridComparison {
  std::string metric;
  double alpha = 0.05;
  int family_size = 0;  // tests Holm corrected over
  // Parallel to results.cells; empty for the baseline, invalid cells and
  // cells without a finished seed (and for every cell without a baseline).
  std::vector<std::optional<BaselineComparison>> cells;
  bool any_bootstrap() const;
};

// Bootstrap resamples (B) and its fixed seed, as the table states them.
inline constexpr int kBootstrapResamples = 10000;
inline constexpr uint64_t kBootstrapSeed = 20240611;

GridComparison CompareWithBaseline(const GridResults& results, const std::string& metric, double alpha = 0.05);

// One line per cell (the baseline included) with finished seeds but fewer
// than kMinSeedsForSignificance, for stderr; empty when none.
std::vector<std::string> FewSeedsWarnings(const GridResults& results);

// significance.csv: one row per compared cell: cell, metric, n, n_baseline,
// delta, ci_low, ci_high, df, t, p, p_holm, significant, bootstrap_low,
// bootstrap_high, note.
std::string SignificanceCsv(const GridResults& results, const GridComparison& comparison);

// "[-0.012, +0.034]" with `digits` decimals.
std::string FormatInterval(double low, double high, int digits);
// "0.031", "4.2e-05": a p-value for the table.
std::string FormatP(double p);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_BASELINE_COMPARISON_H_
