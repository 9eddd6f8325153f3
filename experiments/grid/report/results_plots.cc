#include "experiments/grid/report/results_plots.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/report/plots.h"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

// The mean loss of a cell's finished seeds at the steps they all logged.
std::vector<std::pair<double, double>> MeanCurve(const CellOutcome& cell) {
  std::map<double, std::pair<double, int>> by_step;
  int curves = 0;
  for (const RunOutcome& r : cell.runs) {
    if (r.state != RunState::kFinished || r.diverged() || r.loss_curve.empty()) continue;
    ++curves;
    for (const auto& [step, loss] : r.loss_curve) {
      by_step[step].first += loss;
      by_step[step].second += 1;
    }
  }
  std::vector<std::pair<double, double>> mean;
  for (const auto& [step, sum_count] : by_step)
    if (sum_count.second == curves) mean.emplace_back(step, sum_count.first / curves);
  return mean;
}

// How a cell is drawn in every plot (see results_plots.h).
struct CellStyle {
  std::string color, dash;
  double bar_opacity = 0.85;
};

CellStyle StyleOf(const ExpandedGrid& grid, size_t cell) {
  const std::vector<std::string>& values = grid.cells[cell].axis_values;
  CellStyle style;
  if (values.size() < 2) {
    style.color = PaletteColor(static_cast<int>(cell));
    return style;
  }
  std::vector<std::vector<std::string>> prefixes;
  std::vector<std::string> last_values;
  for (const GridCell& c : grid.cells) {
    std::vector<std::string> prefix(c.axis_values.begin(), c.axis_values.end() - 1);
    if (std::find(prefixes.begin(), prefixes.end(), prefix) == prefixes.end()) prefixes.push_back(prefix);
    if (std::find(last_values.begin(), last_values.end(), c.axis_values.back()) == last_values.end())
      last_values.push_back(c.axis_values.back());
  }
  std::vector<std::string> prefix(values.begin(), values.end() - 1);
  const int color = static_cast<int>(std::find(prefixes.begin(), prefixes.end(), prefix) - prefixes.begin());
  const int shade = static_cast<int>(std::find(last_values.begin(), last_values.end(), values.back()) -
                                     last_values.begin());
  static const char* kDashes[] = {"", "7 4", "2 3", "9 3 2 3"};
  style.color = PaletteColor(color);
  style.dash = kDashes[shade % 4];
  style.bar_opacity = 0.85 - 0.45 * (shade % 4) / 3.0;
  return style;
}

}  // namespace

std::string LossCurvesSvg(const GridResults& results) {
  LinePlotSpec plot;
  plot.title = absl::StrCat(results.grid->name, ": training loss (mean over seeds; seeds faint)");
  plot.x_label = "step";
  plot.y_label = "training loss";
  plot.log_y = true;
  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    const CellStyle style = StyleOf(*results.grid, c);
    for (const RunOutcome& r : cell.runs) {
      if (r.state != RunState::kFinished || r.diverged() || cell.finished() < 2) continue;
      LineSeries s;
      s.color = style.color, s.width = 1, s.opacity = 0.3;
      for (const auto& [step, loss] : r.loss_curve) s.x.push_back(step), s.y.push_back(loss);
      plot.series.push_back(std::move(s));
    }
    std::vector<std::pair<double, double>> mean = MeanCurve(cell);
    if (mean.empty()) continue;
    LineSeries s;
    s.label = cell.cell->label;
    s.color = style.color, s.dash = style.dash, s.width = 2.2;
    for (const auto& [step, loss] : mean) s.x.push_back(step), s.y.push_back(loss);
    plot.series.push_back(std::move(s));
  }
  return RenderLinePlot(plot);
}

std::string MainMetricSvg(const GridResults& results) {
  const std::string& main = results.grid->spec.main_metric();
  BarChartSpec chart;
  chart.title = absl::StrCat(results.grid->name, ": ", main, " per cell (bar = mean, whiskers = ±1 std, dots = seeds)");
  chart.value_label = main;
  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    Bar bar;
    bar.label = cell.cell->label;
    const CellStyle style = StyleOf(*results.grid, c);
    bar.color = style.color;
    bar.opacity = style.bar_opacity;
    bar.baseline = static_cast<int>(c) == results.grid->baseline;
    bar.points = cell.Values(main);
    SeedStats s = Summarize(bar.points);
    bar.n = s.n, bar.mean = s.mean, bar.std = s.std;
    if (!cell.cell->valid()) bar.note = "invalid cell";
    std::vector<std::string> missing;
    int failed = 0, not_run = 0;
    for (const RunOutcome& r : cell.runs) failed += r.state == RunState::kFailed, not_run += r.state == RunState::kNotRun;
    if (cell.diverged() > 0) missing.push_back(absl::StrCat(cell.diverged(), " of ", cell.runs.size(), " seeds diverged"));
    if (failed > 0) missing.push_back(absl::StrCat(failed, " of ", cell.runs.size(), " seeds failed"));
    if (not_run > 0) missing.push_back(absl::StrCat(not_run, " of ", cell.runs.size(), " seeds not run"));
    if (!missing.empty()) bar.note = absl::StrJoin(missing, ", ");
    chart.bars.push_back(std::move(bar));
  }
  return RenderBarChart(chart);
}

std::string ContextPerplexitySvg(const GridResults& results) {
  LinePlotSpec plot;
  plot.title = absl::StrCat(results.grid->name, ": held-out perplexity per evaluation context (mean over seeds; seeds faint)");
  plot.x_label = "evaluation context (tokens)";
  plot.y_label = "perplexity";
  plot.log_x = true;
  plot.log_y = true;
  const std::vector<int32_t> lengths = ContextLengths(results);
  for (size_t c = 0; c < results.cells.size(); ++c) {
    const CellOutcome& cell = results.cells[c];
    const CellStyle style = StyleOf(*results.grid, c);
    LineSeries mean;
    mean.label = cell.cell->label;
    mean.color = style.color, mean.dash = style.dash, mean.width = 2.2;
    for (const RunOutcome& r : cell.runs) {
      if (r.state != RunState::kFinished || r.diverged() || r.metrics.context_evals_size() == 0) continue;
      LineSeries seed;
      seed.color = style.color, seed.width = 1, seed.opacity = 0.3;
      for (const ContextEval& e : r.metrics.context_evals())
        if (e.has_perplexity()) seed.x.push_back(e.context_length()), seed.y.push_back(e.perplexity());
      plot.series.push_back(std::move(seed));
    }
    for (int32_t length : lengths) {
      SeedStats s = Summarize(cell.Values(absl::StrCat("perplexity@", length)));
      if (s.n > 0) mean.x.push_back(length), mean.y.push_back(s.mean);
    }
    if (!mean.x.empty()) plot.series.push_back(std::move(mean));
  }
  return RenderLinePlot(plot);
}

}  // namespace tvlab
