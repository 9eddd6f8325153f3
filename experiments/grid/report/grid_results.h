#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_GRID_RESULTS_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_GRID_RESULTS_H_

// A grid's results, collected from its run directories alone (so they can be
// rebuilt after a crash, or after the runs were trained elsewhere): per cell
// and seed the run's state, metrics.json, its loss curve or its error, and
// per cell the cost estimate. The writers (results_csv.h,
// results_markdown.h, results_plots.h) read nothing else.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "experiments/grid/expand/grid_loader.h"
#include "framework/report/cost_model.h"
#include "framework/report/run_dir.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

struct RunOutcome {
  const GridRun* run = nullptr;
  RunState state = RunState::kNotRun;
  RunMetrics metrics;  // when finished
  std::string error;   // when failed, or when metrics.json is unreadable
  std::vector<std::pair<double, double>> loss_curve;  // (step, loss)
  // Finished, but training diverged (metrics.json has diverged_at_step):
  // a result, with no evaluation metrics.
  bool diverged() const { return state == RunState::kFinished && metrics.has_diverged_at_step(); }
};

struct CellOutcome {
  const GridCell* cell = nullptr;
  std::vector<RunOutcome> runs;  // one per seed
  std::optional<CostEstimate> cost;
  std::string cost_error;  // why `cost` is missing for a valid cell
  // Values of `metric` over the finished seeds that did not diverge.
  std::vector<double> Values(const std::string& metric) const;
  int finished() const;  // finished and not diverged: the seeds with results
  int diverged() const;  // finished by diverging
};

struct GridResults {
  const ExpandedGrid* grid = nullptr;
  std::vector<CellOutcome> cells;  // parallel to grid->cells
  int runs(RunState state) const;
};

// Reads every run directory of `grid` (which must outlive the result) and
// estimates each valid cell's cost (framework/report/cost_model.h).
GridResults CollectResults(const ExpandedGrid& grid);

// OK when `name` is a metric the table and the bar chart can show.
absl::Status ValidateMainMetric(const std::string& name);

// The context lengths any finished run evaluated at (eval.context_lengths),
// ascending: results.md and results.csv get a perplexity column per length.
std::vector<int32_t> ContextLengths(const GridResults& results);

// Whether any finished run measured its decoding speed (eval.decode_speed_tokens).
bool AnyDecodeSpeed(const GridResults& results);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_GRID_RESULTS_H_
