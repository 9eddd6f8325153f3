#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_LADDER_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_LADDER_H_

// The size ladder of a grid (grid.proto's Ladder): every cell of the axes or
// ablation form (a variant) is crossed with each rung (ladder_rungs.h).
// Internal to ExpandGrid (grid_loader.h); the report side is
// experiments/grid/report/ladder_report.h.

#include "absl/status/status.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/expand/ladder_rungs.h"

namespace tvlab {

// Checks the ladder (CheckLadder), that it composes with the rest of the
// grid (no scaling, lr_sweep, equal_budget, hypothesis or seeds_for_power:
// each is refused with the reason; no axis, zip, ablation row or `set` sets
// a field the ladder sets), that every variant evaluates during training
// (train.eval_every > 0) and that the rungs fit its head count, and that
// `compare` names variants; then replaces every cell by one cell per rung:
// label "<variant> <column>=<rung>", the rung as a new last column and the
// rung's sizes as the last overrides. Sets grid->ladder_column; the grid has
// no baseline afterwards (variants are compared along the ladder, not cell
// by cell). Every variant/rung conflict is reported in one error.
absl::Status CrossLadder(const GridSpec& spec, const Experiment& base, ExpandedGrid* grid);

// The variant's label of a ladder cell: the cell's without the
// " <column>=<rung>" CrossLadder appended ("base" when nothing is left).
std::string LadderVariantLabel(const ExpandedGrid& grid, const GridCell& cell);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_LADDER_H_
