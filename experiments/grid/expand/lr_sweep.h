#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_LR_SWEEP_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_LR_SWEEP_H_

// The learning-rate sweep of a grid (grid.proto's LrSweep): every cell of
// the axes or ablation form (a variant) is crossed with each swept value.
// Internal to ExpandGrid (grid_loader.h); the report side, which picks each
// variant's best value, is experiments/grid/report/lr_sweep_report.h.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "experiments/grid/expand/grid_loader.h"

namespace tvlab {

// The swept values as the strings the overrides, labels and report use,
// ascending: `values` as listed (sorted), or log_space's `count` values with
// 3 significant digits. Errors: fewer than 2 values, a value that is not
// positive and finite, a repeated value, values and log_space together, a
// log_space with min >= max or count < 2.
absl::StatusOr<std::vector<std::string>> LrSweepValues(const LrSweep& sweep);

// The number of values, from the list lengths alone (for max_runs).
inline int LrSweepCount(const LrSweep& sweep) {
  return sweep.has_log_space() ? sweep.log_space().count() : sweep.values_size();
}

// True when a lower `metric` is better. Errors for a metric that is not
// measured on held-out data (final_train_loss, parameters, ...), naming the
// held-out ones.
absl::StatusOr<bool> LrSweepLowerIsBetter(const std::string& metric);

// Checks the sweep against the grid (the field exists on the base, no axis,
// zip, ablation row or `set` sets it, no scaling axis) and replaces every
// cell by one cell per value: label "<variant> <column>=<value>", the value
// as a new last column and "<field>=<value>" as the last override. Sets
// grid->lr_column; a baseline variant moves to grid->lr_baseline (its label)
// and grid->baseline becomes -1, since the variants are compared each at its
// own best value (lr_sweep.md), not cell by cell.
absl::Status CrossLrSweep(const GridSpec& spec, const Experiment& base, ExpandedGrid* grid);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_LR_SWEEP_H_
