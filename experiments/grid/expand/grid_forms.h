#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_FORMS_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_FORMS_H_

// The parts of ExpandGrid (grid_loader.h) beyond the axes: the ablation
// form's cells, equal-budget matching and the scaling axis. Internal to the
// grid loader; see grid.proto for what each means to the user.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "experiments/grid/expand/grid_loader.h"

namespace tvlab {

// The baseline (cell 0) and one cell per ablation row, with their labels and
// overrides; sets axis_labels and baseline. Errors: rows without a name or
// overrides, repeated names, override paths that do not exist, an ablation
// mixed with axes, zip or a top-level baseline.
absl::Status AblationCells(const GridSpec& spec, const Experiment& base, ExpandedGrid* grid);

// Resolves a cell with `extra` overrides after its own.
using CellResolver =
    std::function<absl::StatusOr<Experiment>(const GridCell&, const std::vector<std::string>& extra)>;

// Solves equal_budget.field for every valid cell but the baseline (with the
// `seed` overrides; budgets do not depend on the seed), appending
// "<field>=<value>" to its overrides and recording GridCell::budget. Cells
// that fail validation are marked invalid; every unmatchable cell is
// reported in one error.
absl::Status MatchBudgets(const EqualBudget& options, const std::vector<std::string>& seed,
                          const CellResolver& resolve, ExpandedGrid* grid);

// Sets scaling_column and scaling_group; errors for an unknown axis, a
// non-numeric AXIS_VALUE axis, or scaling in an ablation grid.
absl::Status FindScalingAxis(const GridSpec& spec, ExpandedGrid* grid);

// A cell's validation problems, one per line, without ResolveExperiment's
// "<source>: invalid spec:" heading.
std::string CellReason(const absl::Status& status, const std::string& source);
// `text` with `prefix` before every line.
std::string IndentLines(const std::string& text, const std::string& prefix);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_FORMS_H_
