#include "experiments/grid/report/scaling_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/report/plots.h"

namespace tvlab {
namespace {

// The variant a cell belongs to: its axis values but the scaling axis's
// (and those zipped with it).
std::string VariantOf(const ExpandedGrid& grid, const GridCell& cell) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < cell.axis_values.size(); ++i)
    if (std::find(grid.scaling_group.begin(), grid.scaling_group.end(), static_cast<int>(i)) ==
        grid.scaling_group.end())
      parts.push_back(absl::StrCat(grid.axis_labels[i], "=", cell.axis_values[i]));
  return parts.empty() ? "all" : absl::StrJoin(parts, " ");
}

std::string SizeName(const GridSpec& spec) {
  return spec.scaling().size() == Scaling::PARAMETERS ? "parameters" : spec.scaling().axis();
}

}  // namespace

std::vector<VariantScaling> FitScaling(const GridResults& results) {
  const ExpandedGrid& grid = *results.grid;
  std::vector<VariantScaling> out;
  if (!grid.spec.has_scaling() || grid.scaling_column < 0) return out;
  const Scaling& scaling = grid.spec.scaling();
  for (const CellOutcome& cell : results.cells) {
    if (!cell.cell->valid()) continue;
    const std::string variant = VariantOf(grid, *cell.cell);
    auto it = std::find_if(out.begin(), out.end(), [&](const VariantScaling& v) { return v.variant == variant; });
    if (it == out.end()) {
      out.push_back(VariantScaling{variant});
      it = out.end() - 1;
    }
    double n = 0;
    if (scaling.size() == Scaling::PARAMETERS) {
      if (!cell.cost) continue;
      n = static_cast<double>(cell.cost->parameters);
    } else if (!absl::SimpleAtod(cell.cell->axis_values[grid.scaling_column], &n)) {
      continue;
    }
    for (double loss : cell.Values(scaling.metric())) {
      it->n.push_back(n);
      it->loss.push_back(loss);
    }
  }
  for (VariantScaling& v : out) v.fit = FitPowerLaw(v.n, v.loss);
  return out;
}

std::string ScalingMarkdown(const GridResults& results, const std::vector<VariantScaling>& fits) {
  if (fits.empty()) return "";
  const GridSpec& spec = results.grid->spec;
  std::string out = absl::StrCat(
      "## Scaling\n\n", spec.scaling().metric(), " = a·N^-b + c per variant, N = ", SizeName(spec),
      " (axis ", spec.scaling().axis(), "), least squares over every finished seed (Levenberg–Marquardt; ± is one "
      "standard error from the fit's covariance, as scipy.optimize.curve_fit reports it).\n\n"
      "| variant | points | b (exponent) | a | c (irreducible) | note |\n|---|---:|---:|---:|---:|---|\n");
  double lo = INFINITY, hi = 0;
  for (const VariantScaling& v : fits) {
    for (double n : v.n) lo = std::min(lo, n), hi = std::max(hi, n);
    if (v.fit.ok()) {
      absl::StrAppend(&out, "| ", v.variant, " | ", v.n.size(), " | ",
                      absl::StrFormat("%.3f ± %.3f", v.fit->b, v.fit->b_se), " | ", absl::StrFormat("%.4g", v.fit->a),
                      " | ", absl::StrFormat("%.4f ± %.4f", v.fit->c, v.fit->c_se), " |  |\n");
    } else {
      absl::StrAppend(&out, "| ", v.variant, " | ", v.n.size(), " |  |  |  | no fit: ", v.fit.status().message(),
                      " |\n");
    }
  }
  std::vector<std::string> crossings;
  for (size_t i = 0; i < fits.size(); ++i)
    for (size_t j = i + 1; j < fits.size(); ++j) {
      if (!fits[i].fit.ok() || !fits[j].fit.ok()) continue;
      for (double n : CrossingSizes(*fits[i].fit, *fits[j].fit, lo, hi))
        crossings.push_back(absl::StrCat(fits[i].variant, " and ", fits[j].variant, " cross at N ≈ ",
                                         absl::StrFormat("%.4g", n)));
    }
  absl::StrAppend(&out, "\n", crossings.empty() ? "No two fitted curves cross within the sizes measured"
                                                : absl::StrJoin(crossings, "; "),
                  lo <= hi ? absl::StrFormat(" (N from %.4g to %.4g).", lo, hi) : ".",
                  "\n\n![scaling](scaling.svg)\n\n");
  return out;
}

std::string ScalingSvg(const GridResults& results, const std::vector<VariantScaling>& fits) {
  const GridSpec& spec = results.grid->spec;
  LinePlotSpec plot;
  plot.title = absl::StrCat(results.grid->name, ": ", spec.scaling().metric(), " against ", SizeName(spec),
                            " (dots = seeds, lines = fitted a·N^-b + c)");
  plot.x_label = SizeName(spec);
  plot.y_label = spec.scaling().metric();
  plot.log_x = plot.log_y = true;
  for (size_t i = 0; i < fits.size(); ++i) {
    const VariantScaling& v = fits[i];
    LineSeries points;
    points.color = PaletteColor(static_cast<int>(i));
    points.markers = true;
    points.opacity = 0.6;
    points.x = v.n, points.y = v.loss;
    plot.series.push_back(points);
    if (!v.fit.ok() || v.n.empty()) continue;
    LineSeries line;
    line.label = absl::StrCat(v.variant, absl::StrFormat(" (b = %.2f)", v.fit->b));
    line.color = PaletteColor(static_cast<int>(i));
    line.width = 2;
    const double lo = *std::min_element(v.n.begin(), v.n.end()), hi = *std::max_element(v.n.begin(), v.n.end());
    for (int k = 0; k <= 40; ++k) {
      const double n = lo * std::pow(hi / lo, k / 40.0);
      line.x.push_back(n);
      line.y.push_back(v.fit->Predict(n));
    }
    plot.series.push_back(line);
  }
  return RenderLinePlot(plot);
}

}  // namespace tvlab
