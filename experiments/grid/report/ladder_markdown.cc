// ladder.md and ladder.svg (ladder_report.h).

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/expand/ladder_rungs.h"
#include "experiments/grid/report/ladder_report.h"
#include "experiments/grid/report/results_format.h"
#include "framework/report/plots.h"

namespace tvlab {
namespace {

std::string G(double v) { return absl::StrFormat("%.3g", v); }

// "2.3100 [2.2800, 2.3400], n=3" (loss: 4 decimals) or "1.2e+09 [...]"
// (FLOPs: 3 significant digits); "2.3100 (n=1; no interval: ...)".
std::string WithInterval(const MeanInterval& m, bool flops) {
  auto num = [&](double v) { return flops ? G(v) : absl::StrFormat("%.4f", v); };
  if (m.n == 0) return "—";
  if (!m.defined) return absl::StrCat(num(m.mean), " (n=", m.n, "; no interval: ", m.why_undefined, ")");
  return absl::StrCat(num(m.mean), " [", num(m.low), ", ", num(m.high), "], n=", m.n);
}

std::string TargetCell(const LadderRungResult& r) {
  if (r.finished == 0) return "—";
  if (!r.target_complete) {
    double best = INFINITY;
    for (const LadderRun& run : r.runs)
      if (run.measured && !run.target.reached() && !run.eval_loss.empty()) best = std::min(best, run.target.best_loss);
    return absl::StrCat("not reached by ", r.finished - r.reached, " of ", r.finished, " seed(s)",
                        std::isfinite(best) ? absl::StrFormat(" (best eval_loss %.4f)", best) : " (no evaluations)");
  }
  std::string text = WithInterval(r.target_flops, true);
  if (r.at_or_before > 0)
    absl::StrAppend(&text, " (≤: ", r.at_or_before, " seed(s) had reached it by their first evaluation)");
  return text;
}

std::string FitRow(const LadderVariant& v, const std::string& against, const absl::StatusOr<PowerLawFit>& fit,
                   size_t points) {
  if (!fit.ok()) return absl::StrCat("| ", MdCell(v.label), " | ", against, " | ", points, " |  |  |  | no fit: ",
                                     MdCell(std::string(fit.status().message())), " |\n");
  return absl::StrCat("| ", MdCell(v.label), " | ", against, " | ", points, " | ",
                      absl::StrFormat("%.3f ± %.3f", fit->b, fit->b_se), " | ", G(fit->a), " | ",
                      absl::StrFormat("%.4f ± %.4f", fit->c, fit->c_se), " |  |\n");
}

// One pair on one axis: where the fitted curves cross, labelled.
std::string CrossingLine(const LadderVariant& a, const LadderVariant& b, const std::string& axis,
                         const std::vector<double>& xa, const std::vector<double>& xb,
                         const absl::StatusOr<PowerLawFit>& fa, const absl::StatusOr<PowerLawFit>& fb) {
  const std::string pair = absl::StrCat("**", a.label, "** vs **", b.label, "** (", axis, ")");
  if (!fa.ok() || !fb.ok()) {
    return absl::StrCat("- ", pair, ": no crossing computed: no fit for ", !fa.ok() ? a.label : b.label,
                        " (see Fits)\n");
  }
  const auto [alo, ahi] = std::minmax_element(xa.begin(), xa.end());
  const auto [blo, bhi] = std::minmax_element(xb.begin(), xb.end());
  const CurveCrossings c = CrossFittedCurves(*fa, *fb, *alo, *ahi, *blo, *bhi);
  const std::string range = c.overlap_lo <= c.overlap_hi
                                ? absl::StrCat("the range both measured, ", G(c.overlap_lo), " to ", G(c.overlap_hi))
                                : "the two variants' measured ranges do not overlap";
  auto lower_after = [&](double x) {
    return fa->Predict(x * 1.01) < fb->Predict(x * 1.01) ? a.label : b.label;
  };
  std::vector<std::string> parts;
  for (double x : c.in_range)
    parts.push_back(absl::StrCat("cross at ", G(x), " within ", range, "; above it ", lower_after(x), " is lower"));
  for (double x : c.extrapolated) {
    parts.push_back(absl::StrCat("EXTRAPOLATED: cross at ", G(x), ", outside ", range,
                                 " (a prediction of the fits, not a measurement); above it ", lower_after(x),
                                 " is lower"));
  }
  if (parts.empty()) {
    const double x = std::sqrt(c.search_lo * c.search_hi);
    parts.push_back(absl::StrCat("no crossing in range: the fitted curves do not cross between ", G(c.search_lo),
                                 " and ", G(c.search_hi), " (", range, ", extended 100x each way); ",
                                 lower_after(x), " is lower throughout"));
  }
  return absl::StrCat("- ", pair, ": ", absl::StrJoin(parts, "; "), "\n");
}

}  // namespace

std::string LadderMarkdown(const GridResults& results, const std::vector<LadderVariant>& variants) {
  const ExpandedGrid& grid = *results.grid;
  const Ladder& ladder = grid.spec.ladder();
  const std::string column = LadderColumn(ladder);
  const std::string conf = absl::StrFormat("%g%%", 100 * ladder.confidence());
  std::string out = absl::StrCat(
      "# ", grid.name, ": size ladder (", column, "), target eval_loss ", G(ladder.target_loss()), "\n\n",
      "FLOPs are training FLOPs: the cost model's FLOPs per token x the tokens trained. *FLOPs to target* is where a "
      "run's evaluation curve (every train.eval_every steps) first reaches eval_loss ",
      G(ladder.target_loss()), ", interpolated linearly in FLOPs between evaluations; per rung the mean over seeds "
      "with its ", conf, " t interval. A rung where a seed never reached the target has no mean (\"not reached\"); "
      "\"≤\" marks seeds that had reached it by their first evaluation (an upper bound).\n\n| variant | ", column,
      " | d_model | layers | parameters | FLOPs/token | train FLOPs | final eval_loss (mean [", conf,
      " CI]) | FLOPs to target (mean [", conf, " CI]) | note |\n|---|---|---:|---:|---:|---:|---:|---|---|---|\n");
  for (const LadderVariant& v : variants) {
    for (const LadderRungResult& r : v.rungs) {
      absl::StrAppend(&out, "| ", MdCell(v.label), " | ", MdCell(r.rung), " | ",
                      r.d_model > 0 ? absl::StrCat(r.d_model) : "", " | ",
                      r.d_model > 0 ? absl::StrCat(r.num_layers) : "", " | ", r.has_cost ? G(r.parameters) : "",
                      " | ", r.has_cost ? G(r.flops_per_token) : "", " | ",
                      r.finished > 0 ? G(r.train_flops.mean) : "", " | ", WithInterval(r.final_loss, false), " | ",
                      TargetCell(r), " | ", MdCell(r.note), " |\n");
    }
  }
  absl::StrAppend(&out, "\n## Fits: final eval_loss = a·X^-b + c\n\nPer variant over every finished seed of every "
                        "rung (framework/report/scaling_fit.h: Levenberg–Marquardt; ± is one standard error, as "
                        "scipy.optimize.curve_fit reports it). X is the run's training FLOPs C, or the parameters N.\n\n"
                        "| variant | X | points | b | a | c | note |\n|---|---|---:|---:|---:|---:|---|\n");
  for (const LadderVariant& v : variants) {
    absl::StrAppend(&out, FitRow(v, "train FLOPs C", v.fit_compute, v.compute.size()),
                    FitRow(v, "parameters N", v.fit_parameters, v.parameters.size()));
  }
  absl::StrAppend(&out, "\n## Where the fitted curves cross\n\n");
  const std::vector<std::pair<int, int>> pairs = LadderPairs(grid.spec, variants);
  if (pairs.empty()) absl::StrAppend(&out, "One variant: nothing to cross.\n");
  for (const auto& [i, j] : pairs) {
    const LadderVariant &a = variants[i], &b = variants[j];
    absl::StrAppend(&out, CrossingLine(a, b, "train FLOPs C", a.compute, b.compute, a.fit_compute, b.fit_compute),
                    CrossingLine(a, b, "parameters N", a.parameters, b.parameters, a.fit_parameters,
                                 b.fit_parameters));
  }
  absl::StrAppend(&out, "\nPer run: ladder_runs.csv. ![ladder](ladder.svg)\n");
  return out;
}

std::string LadderSvg(const GridResults& results, const std::vector<LadderVariant>& variants) {
  const ExpandedGrid& grid = *results.grid;
  LinePlotSpec plot;
  plot.title = absl::StrCat(grid.name, ": eval_loss against training FLOPs (thin: each run's evaluations; "
                                       "dashed: final eval_loss fitted a·C^-b + c; grey: target)");
  plot.x_label = "training FLOPs";
  plot.y_label = "eval_loss";
  plot.log_x = plot.log_y = true;
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const LadderVariant& v = variants[i];
    const std::string color = PaletteColor(static_cast<int>(i));
    bool labelled = false;
    for (const LadderRungResult& r : v.rungs)
      for (const LadderRun& run : r.runs) {
        if (!run.measured || run.eval_flops.empty()) continue;
        LineSeries line;
        line.label = labelled ? "" : v.label;
        labelled = true;
        line.color = color, line.width = 1, line.opacity = 0.7;
        line.x = run.eval_flops, line.y = run.eval_loss;
        for (double x : line.x) lo = std::min(lo, x), hi = std::max(hi, x);
        plot.series.push_back(std::move(line));
      }
    if (!v.fit_compute.ok() || v.compute.empty()) continue;
    LineSeries fit;
    fit.label = absl::StrCat(v.label, absl::StrFormat(" fit (b = %.2f)", v.fit_compute->b));
    fit.color = color, fit.width = 2, fit.dash = "6 3";
    const double a = *std::min_element(v.compute.begin(), v.compute.end());
    const double b = *std::max_element(v.compute.begin(), v.compute.end());
    for (int k = 0; k <= 40; ++k) {
      fit.x.push_back(a * std::pow(b / a, k / 40.0));
      fit.y.push_back(v.fit_compute->Predict(fit.x.back()));
    }
    plot.series.push_back(std::move(fit));
  }
  if (lo < hi) {
    LineSeries target;
    target.label = absl::StrCat("target ", G(grid.spec.ladder().target_loss()));
    target.color = "#888888", target.dash = "2 2";
    target.x = {lo, hi};
    target.y = {grid.spec.ladder().target_loss(), grid.spec.ladder().target_loss()};
    plot.series.push_back(std::move(target));
  }
  return RenderLinePlot(plot);
}

}  // namespace tvlab
