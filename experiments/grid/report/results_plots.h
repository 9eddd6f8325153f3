#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_PLOTS_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_PLOTS_H_

// The grid's plots (framework/report/plots.h), each an SVG document. Every
// cell keeps one style in all of them: with two or more axes the colour
// follows the values of all but the last axis and the dash (bar shade) the
// last axis's value; with one axis every cell has its own colour.

#include <string>

#include "experiments/grid/report/grid_results.h"

namespace tvlab {

// loss_curves.svg: training loss of every cell on shared axes (mean over
// seeds; each seed faint when a cell has two or more).
std::string LossCurvesSvg(const GridResults& results);
// eval.context_lengths: perplexity against the evaluation context per cell
// (log-log), the mean bold and each seed faint; written when runs have them.
std::string ContextPerplexitySvg(const GridResults& results);
// <main_metric>.svg: the main metric per cell, bar = mean, whiskers = ±1
// std, dots = seeds; a note on cells with invalid, diverged, failed or
// missing seeds.
std::string MainMetricSvg(const GridResults& results);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_PLOTS_H_
