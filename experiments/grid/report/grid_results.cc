#include "experiments/grid/report/grid_results.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/report/stats.h"

namespace tvlab {

std::vector<double> CellOutcome::Values(const std::string& metric) const {
  std::vector<double> out;
  for (const RunOutcome& r : runs) {
    if (r.state != RunState::kFinished || r.diverged()) continue;
    auto v = MetricValue(r.metrics, metric);
    if (v.ok()) out.push_back(*v);
  }
  return out;
}

int CellOutcome::finished() const {
  int n = 0;
  for (const RunOutcome& r : runs) n += r.state == RunState::kFinished && !r.diverged();
  return n;
}

int CellOutcome::diverged() const {
  int n = 0;
  for (const RunOutcome& r : runs) n += r.diverged();
  return n;
}

int GridResults::runs(RunState state) const {
  int n = 0;
  for (const CellOutcome& c : cells)
    for (const RunOutcome& r : c.runs) n += r.state == state;
  return n;
}

GridResults CollectResults(const ExpandedGrid& grid) {
  GridResults results;
  results.grid = &grid;
  for (const GridCell& cell : grid.cells) {
    CellOutcome out;
    out.cell = &cell;
    for (const GridRun& run : cell.runs) {
      RunOutcome r;
      r.run = &run;
      r.state = ReadRunState(run.run_dir);
      if (r.state == RunState::kFinished) {
        auto metrics = ReadMetrics(run.run_dir);
        if (metrics.ok()) {
          r.metrics = *metrics;
          r.loss_curve = ReadLossCurve(run.run_dir);
        } else {
          r.state = RunState::kFailed;
          r.error = std::string(metrics.status().message());
        }
      } else if (r.state == RunState::kFailed) {
        r.error = ReadFailure(run.run_dir);
      }
      out.runs.push_back(std::move(r));
    }
    if (!cell.runs.empty()) {
      auto cost = CostOfExperiment(cell.runs[0].spec);
      if (cost.ok()) {
        out.cost = *cost;
      } else {
        out.cost_error = std::string(cost.status().message());
      }
    }
    results.cells.push_back(std::move(out));
  }
  return results;
}

absl::Status ValidateMainMetric(const std::string& name) {
  absl::Status known = CheckMetricName(name);
  if (!known.ok()) return absl::InvalidArgumentError(absl::StrCat("main_metric: ", known.message()));
  return absl::OkStatus();
}

std::vector<int32_t> ContextLengths(const GridResults& results) {
  std::vector<int32_t> lengths;
  for (const CellOutcome& cell : results.cells)
    for (const RunOutcome& r : cell.runs)
      if (r.state == RunState::kFinished)
        for (const ContextEval& e : r.metrics.context_evals()) lengths.push_back(e.context_length());
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

bool AnyDecodeSpeed(const GridResults& results) {
  for (const CellOutcome& cell : results.cells)
    for (const RunOutcome& r : cell.runs)
      if (r.state == RunState::kFinished && r.metrics.has_decode_tokens_per_second()) return true;
  return false;
}

}  // namespace tvlab
