#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_CSV_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_CSV_H_

// results.csv: one row per cell and seed, every metric and cost (state
// "diverged" with its step for a diverged run; one row with state "invalid"
// and the reason for an invalid cell). Columns that only some grids measure
// (perplexity@N, decode_tokens_per_second, the equal-budget columns) are there
// only for those grids, so other grids' files keep their columns.

#include <string>

#include "experiments/grid/report/grid_results.h"

namespace tvlab {

std::string ResultsCsv(const GridResults& results);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_RESULTS_CSV_H_
