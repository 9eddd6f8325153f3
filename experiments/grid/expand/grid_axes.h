#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_AXES_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_AXES_H_

// The axis form of a grid (grid.proto's axis and zip): its cells are the
// product of the axes and zip groups, first axis slowest, each labelled
// "<label>=<value> ..." and holding the grid's `set` overrides followed by one
// override per axis. Internal to ExpandGrid (grid_loader.h).

#include "absl/status/status.h"
#include "experiments/grid/expand/grid_loader.h"

namespace tvlab {

// Fills grid->axis_labels, grid->cells (labels, axis values, overrides) and
// grid->baseline (the one cell `baseline` selects, -1 without one). Errors:
// an axis without field or values, a value listed twice, zipped axes of
// unequal lengths, a field varied by two axes, a `seed` axis beside `seeds`,
// a baseline that names no axis or does not select exactly one cell.
absl::Status AxisCells(const GridSpec& spec, ExpandedGrid* grid);

// The number of runs the grid expands to (axis or zip points, or ablation
// rows, times seeds), from the spec's list lengths alone, must be at most
// spec.max_runs(): the error names each axis's length and the fix.
absl::Status CheckGridSize(const GridSpec& spec);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_AXES_H_
