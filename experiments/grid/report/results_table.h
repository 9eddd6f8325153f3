#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_TABLE_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_TABLE_H_

// A grid's report, rebuilt from its run directories alone: the results are
// collected (grid_results.h) and written as
//   results.csv        one row per cell and seed (results_csv.h)
//   results.md         one row per cell, with significance (results_markdown.h)
//   significance.csv   each cell against the baseline (baseline_comparison.h)
//   hypotheses.csv     with spec.hypothesis: the pre-registered tests and
//                      their power (hypothesis_report.h)
//   loss_curves.svg    training loss of every cell (results_plots.h)
//   <main_metric>.svg  the main metric per cell with seed error bars
//   scaling.svg        with spec.scaling: the fitted curves (scaling_report.h)
//   ladder.csv, ladder_runs.csv, ladder.md, ladder.svg
//                      with spec.ladder (ladder_report.h)
//   context_perplexity.svg  when runs evaluated at eval.context_lengths
//   probes.csv         when runs recorded training probes (probes_report.h)
// This header brings the writers (and results_format.h) together for callers
// that want all of them.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/report/grid_results.h"
#include "experiments/grid/report/results_csv.h"
#include "experiments/grid/report/results_format.h"
#include "experiments/grid/report/results_markdown.h"
#include "experiments/grid/report/results_plots.h"
#include "framework/io/file_system.h"

namespace tvlab {

// Writes every file above into grid->results_dir (created if needed), each
// through the atomic writer (framework/io/atomic_file.h); returns their paths.
absl::StatusOr<std::vector<std::string>> WriteReport(const GridResults& results,
                                                     FileSystem* fs = DefaultFileSystem());

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_TABLE_H_
