#ifndef TVLAB_FRAMEWORK_REPORT_RESULTS_TABLE_H_
#define TVLAB_FRAMEWORK_REPORT_RESULTS_TABLE_H_

// A grid's results, read back from its run directories alone (so they can
// be rebuilt after a crash), and written as:
//   results.csv        one row per cell and seed, every metric and cost
//                      (state "diverged" with its step for a diverged run)
//   results.md         one row per cell: mean ± std over seeds, delta
//                      against the baseline cell, cost columns, the plots
//   loss_curves.svg    training loss of every cell on shared axes
//   <main_metric>.svg  the main metric per cell with seed error bars

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "framework/io/file_system.h"
#include "framework/report/cost_model.h"
#include "framework/report/run_dir.h"
#include "experiments/spec/grid_loader.h"
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

std::string ResultsCsv(const GridResults& results);
std::string ResultsMarkdown(const GridResults& results);
std::string LossCurvesSvg(const GridResults& results);
// eval.context_lengths: perplexity against the evaluation context per cell
// (log-log), the mean bold and each seed faint; written when runs have them.
std::string ContextPerplexitySvg(const GridResults& results);
std::string MainMetricSvg(const GridResults& results);

// Writes the four files into grid->results_dir (created if needed), each
// through the atomic writer (framework/io/atomic_file.h); returns their paths.
absl::StatusOr<std::vector<std::string>> WriteReport(const GridResults& results,
                                                     FileSystem* fs = DefaultFileSystem());

// "1.23M", "45.6k", "789": three significant digits for cost columns.
std::string FormatSi(double value);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_RESULTS_TABLE_H_
