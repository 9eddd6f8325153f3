#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_REPORT_PROBES_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_REPORT_PROBES_H_

// A grid's `report_probes` (grid.proto): the training probes results.md
// tabulates, checked when the grid is expanded. Which probe names exist is
// known only once runs have finished (they follow the model's layers and
// modules), so an entry that matches none is noted in results.md
// (experiments/grid/report/probes_report.h), not an error here. Internal to
// ExpandGrid (grid_loader.h).

#include "absl/status/status.h"
#include "experiments/grid/expand/grid_loader.h"

namespace tvlab {

// OK when report_probes is empty, or when each entry is non-empty and listed
// once and some valid cell records probes (train.probe_every > 0 in its
// resolved spec). Errors name the field ("report_probes[1]") and the fix.
absl::Status CheckReportProbes(const ExpandedGrid& grid);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_REPORT_PROBES_H_
