#include "experiments/grid/report/lr_sweep_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/expand/lr_sweep.h"
#include "experiments/grid/report/results_format.h"
#include "framework/report/plots.h"

namespace tvlab {
namespace {

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double Sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// The variant's label: the cell's without the " <column>=<value>" that
// CrossLrSweep (lr_sweep.h) appended.
std::string VariantLabel(const ExpandedGrid& grid, const GridCell& cell) {
  const std::string suffix = absl::StrCat(grid.axis_labels[grid.lr_column], "=", cell.axis_values[grid.lr_column]);
  std::string label = cell.label.substr(0, cell.label.size() - std::min(suffix.size(), cell.label.size()));
  if (!label.empty() && label.back() == ' ') label.pop_back();
  return label.empty() ? "base" : label;
}

std::string Cell(const LrPoint& p, bool chosen) {
  if (p.seeds == 0) return "invalid";
  std::string text = p.values.empty() ? "—" : absl::StrFormat("%.4g", Mean(p.values));
  if (p.diverged > 0) absl::StrAppend(&text, " (diverged ", p.diverged, "/", p.seeds, ")");
  else if (!p.complete()) absl::StrAppend(&text, " (", p.values.size(), "/", p.seeds, " seeds)");
  return chosen ? absl::StrCat("**", text, "**") : text;
}

std::string Note(const LrVariant& v) {
  if (v.choice.best < 0) return "no swept value has every seed finished without diverging";
  std::vector<std::string> notes;
  if (v.choice.at_edge) {
    notes.push_back(absl::StrCat("at the ", v.choice.best == 0 ? "smallest" : "largest",
                                 " swept value: the optimum may lie outside the range; extend the sweep"));
  }
  if (v.choice.tie) notes.push_back("tie: the smaller value was chosen");
  return absl::StrJoin(notes, "; ");
}

}  // namespace

LrChoice ChooseLr(const std::vector<LrPoint>& points, bool lower_is_better) {
  LrChoice choice;
  double best = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].complete()) continue;
    const double m = Mean(points[i].values);
    if (choice.best >= 0 && m == best) choice.tie = true;
    const bool better = choice.best < 0 || (lower_is_better ? m < best : m > best);
    if (!better) continue;
    choice.best = static_cast<int>(i), best = m, choice.tie = false;
  }
  choice.at_edge = choice.best == 0 || (choice.best >= 0 && choice.best + 1 == static_cast<int>(points.size()));
  return choice;
}

std::vector<LrVariant> LrSweepVariants(const GridResults& results) {
  const ExpandedGrid& grid = *results.grid;
  std::vector<LrVariant> variants;
  if (!grid.spec.has_lr_sweep() || grid.lr_column < 0) return variants;
  const std::string& metric = grid.spec.lr_sweep().metric();
  std::map<std::string, size_t> index;
  for (const CellOutcome& c : results.cells) {
    const std::string label = VariantLabel(grid, *c.cell);
    auto [it, inserted] = index.emplace(label, variants.size());
    if (inserted) variants.push_back(LrVariant{label, {}, {}, {}});
    LrVariant& v = variants[it->second];
    LrPoint p;
    p.lr = c.cell->axis_values[grid.lr_column];
    p.values = c.Values(metric);
    p.seeds = static_cast<int>(c.cell->runs.size());
    p.diverged = c.diverged();
    v.cells.push_back(&c);
    v.points.push_back(std::move(p));
  }
  const bool lower = LrSweepLowerIsBetter(metric).value_or(true);  // validated when the grid was expanded
  for (LrVariant& v : variants) v.choice = ChooseLr(v.points, lower);
  return variants;
}

std::string LrSweepMarkdown(const GridResults& results, const std::vector<LrVariant>& variants) {
  const ExpandedGrid& grid = *results.grid;
  const LrSweep& sweep = grid.spec.lr_sweep();
  const std::string& metric = sweep.metric();
  const bool lower = LrSweepLowerIsBetter(metric).value_or(true);
  const std::string column = grid.axis_labels[grid.lr_column];
  const LrVariant* baseline = nullptr;
  for (const LrVariant& v : variants)
    if (!grid.lr_baseline.empty() && grid.lr_baseline == v.label && v.choice.best >= 0)
      baseline = &v;
  std::string out = absl::StrCat(
      "# ", grid.name, ": each variant at its own best ", sweep.field(), "\n\n", "Chosen per variant: the value with the ",
      lower ? "lowest" : "highest", " mean ", metric, " (held-out) over its seeds; a value is eligible only when every ",
      "seed finished without diverging; ties go to the smaller value.\n\n| variant | best ", column, " | ", metric,
      " (mean ± sd, n) |", baseline ? absl::StrCat(" Δ vs ", baseline->label, " |") : "", " note |\n|---|---|---|",
      baseline ? "---|" : "", "---|\n");
  for (const LrVariant& v : variants) {
    const int b = v.choice.best;
    const std::vector<double>* vals = b >= 0 ? &v.points[b].values : nullptr;
    std::string delta;
    if (baseline != nullptr) {
      delta = vals == nullptr ? " — |"
                              : absl::StrFormat(" %+.4g |", Mean(*vals) - Mean(baseline->points[baseline->choice.best].values));
    }
    absl::StrAppend(&out, "| ", MdCell(v.label), " | ", b >= 0 ? v.points[b].lr : "—", " | ",
                    vals ? absl::StrFormat("%.4g ± %.2g (%d)", Mean(*vals), Sd(*vals), vals->size()) : "—", " |",
                    delta, " ", MdCell(Note(v)), " |\n");
  }
  absl::StrAppend(&out, "\n## ", metric, " at every ", column, " (mean over seeds; chosen in bold)\n\n| variant |");
  if (!variants.empty()) {
    for (const LrPoint& p : variants[0].points) absl::StrAppend(&out, " ", p.lr, " |");
    absl::StrAppend(&out, "\n|---|");
    for (size_t i = 0; i < variants[0].points.size(); ++i) absl::StrAppend(&out, "---|");
    absl::StrAppend(&out, "\n");
  }
  for (const LrVariant& v : variants) {
    absl::StrAppend(&out, "| ", MdCell(v.label), " |");
    for (size_t i = 0; i < v.points.size(); ++i)
      absl::StrAppend(&out, " ", Cell(v.points[i], static_cast<int>(i) == v.choice.best), " |");
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "\n![lr sweep](lr_sweep.svg)\n");
  return out;
}

std::string LrSweepSvg(const GridResults& results, const std::vector<LrVariant>& variants) {
  const ExpandedGrid& grid = *results.grid;
  LinePlotSpec plot;
  const std::string& metric = grid.spec.lr_sweep().metric();
  plot.title = absl::StrCat(grid.name, ": ", metric, " against ", grid.spec.lr_sweep().field(),
                            " (mean over seeds; dot = chosen)");
  plot.x_label = grid.spec.lr_sweep().field();
  plot.y_label = metric;
  plot.log_x = true;
  for (size_t i = 0; i < variants.size(); ++i) {
    const LrVariant& v = variants[i];
    LineSeries line, chosen;
    line.label = v.label;
    line.color = chosen.color = PaletteColor(static_cast<int>(i));
    chosen.markers = true;
    for (size_t k = 0; k < v.points.size(); ++k) {
      double lr = 0;
      if (v.points[k].values.empty() || !absl::SimpleAtod(v.points[k].lr, &lr)) continue;
      line.x.push_back(lr), line.y.push_back(Mean(v.points[k].values));
      if (static_cast<int>(k) == v.choice.best) chosen.x.push_back(lr), chosen.y.push_back(line.y.back());
    }
    plot.series.push_back(line);
    plot.series.push_back(chosen);
  }
  return RenderLinePlot(plot);
}

}  // namespace tvlab
