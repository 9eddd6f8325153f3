#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_MARKDOWN_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_MARKDOWN_H_

// results.md: what the grid ran (cells, runs and their states), how to read
// the table (the baseline, significance, equal budgets, few-seed warnings),
// then one row per cell: mean ± std over seeds of the main and quality
// metrics, Δ against the baseline with its Welch CI, p and Holm p (and a
// bootstrap CI with enough seeds), perplexity per evaluation context, cost
// columns, and notes (invalid cells, failed, missing and diverged seeds).
// Then, when runs recorded training probes or report_probes asks for them,
// the "Probes (exploratory)" section (probes_report.h), the scaling section
// (scaling_report.h) and the plots.

#include <string>

#include "experiments/grid/report/grid_results.h"

namespace tvlab {

std::string ResultsMarkdown(const GridResults& results);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_MARKDOWN_H_
