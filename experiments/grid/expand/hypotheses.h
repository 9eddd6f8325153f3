#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_HYPOTHESES_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_HYPOTHESES_H_

// A grid's pre-registered hypotheses (grid.proto's `hypothesis`), checked
// against its expanded cells before anything runs: each names exactly one
// valid cell A and one valid cell B, a known metric, a direction consistent
// with its sidedness, a positive smallest effect, an alpha in (0, 1) shared
// by its family, and, for a paired test, cells that a seed gives the same
// data order and random streams. Internal to ExpandGrid (grid_loader.h).

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "experiments/grid/expand/grid_loader.h"

namespace tvlab {

// Fills grid->hypotheses from grid->spec.hypothesis(). Errors name the field
// path ("hypothesis[1].a"), what is wrong and the valid choices (the axis
// labels and values of the grid's cells).
absl::Status ResolveHypotheses(ExpandedGrid* grid);

// The indices of the cells whose axis values match every "<label>=<value>"
// of `selectors` (a label is an axis label or its field path). `where` names
// the field in errors: an unknown label, or a selector without '='.
absl::StatusOr<std::vector<int>> SelectCells(const ExpandedGrid& grid, const std::vector<std::string>& selectors,
                                             const std::string& where);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_HYPOTHESES_H_
