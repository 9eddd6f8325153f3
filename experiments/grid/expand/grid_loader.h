#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_LOADER_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_LOADER_H_

// From a grid spec (grid.proto) to its cells: every cell is the base
// experiment plus one value of each axis, resolved and validated exactly as
// the run binary would (ResolveExperiment), once per seed. A cell that fails
// validation is kept with its reason, so all of them can be reported before
// anything trains.
//
// Each (cell, seed) run is keyed by RunKey(resolved spec) (run_key.h) and lives in
// <output_dir>/runs/<key>/. The key changes exactly when the resolved spec
// does, so a finished run is found again after the grid is extended,
// reordered or relabelled.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"
#include "framework/schema/grid.pb.h"

namespace tvlab {

// One cell trained with one seed.
struct GridRun {
  uint64_t seed = 0;
  Experiment spec;      // resolved and validated
  std::string key;      // RunKey(spec)
  std::string run_dir;  // <output_dir>/runs/<key>
};

// equal_budget: what was solved for a cell.
struct BudgetMatch {
  std::string field;          // "model.d_ff"
  std::optional<int64_t> value;  // the solved value (the baseline's own value for the baseline)
  double budget = 0;          // the cell's budget at that value
  double target = 0;          // the baseline's budget
  double deviation = 0;       // (budget - target) / target
};

struct GridCell {
  std::string label;                     // "position=none placement=pre_ln", or the ablation row's name
  std::vector<std::string> axis_values;  // one per ExpandedGrid::axis_labels
  std::vector<std::string> overrides;    // "model.position.plugin=none", ...
  std::vector<GridRun> runs;             // one per seed; empty when invalid
  std::string invalid_reason;            // non-empty: the cell cannot run
  std::optional<BudgetMatch> budget;     // with equal_budget, for valid cells
  bool valid() const { return invalid_reason.empty(); }
};

// A pre-registered hypothesis (grid.proto's Hypothesis), its cells found.
struct GridHypothesis {
  Hypothesis spec;
  int cell_a = -1, cell_b = -1;  // indices into ExpandedGrid::cells
  std::string metric;            // spec.metric, or the grid's main_metric
  std::string family;            // spec.family, or "primary"
  bool paired() const { return spec.test() == Hypothesis::PAIRED_BY_SEED; }
  bool equivalence() const { return spec.direction() == Hypothesis::EQUIVALENT; }
};

struct ExpandedGrid {
  GridSpec spec;
  std::string name;
  std::string output_dir;
  std::string results_dir;
  std::vector<std::string> axis_labels;  // result columns, in axis order
  std::vector<GridCell> cells;           // first axis varies slowest
  int baseline = -1;                     // index into cells, -1 if none
  int scaling_column = -1;               // spec.scaling: its axis in axis_values, else -1
  std::vector<int> scaling_group;        // that column and the columns zipped with it
  std::vector<GridHypothesis> hypotheses;  // in spec order
  int lr_column = -1;                    // spec.lr_sweep: the swept value's column, else -1
  std::string lr_baseline;               // spec.lr_sweep: the baseline variant's label ("" if none)
  int ladder_column = -1;                // spec.ladder: the rung's column, else -1
  int num_invalid() const;
};

// Parses a grid file; errors read "<path>:<line>:<col>: ...".
absl::StatusOr<GridSpec> ParseGridFile(const std::string& path);

// Expands and validates every cell. `grid_path` locates relative paths in
// the spec; `working_dir` is where the default output directory
// (runs/<name>) goes. Errors in the grid itself (unreadable base, empty or
// mismatched axes, a baseline that selects no cell; an ablation row without
// overrides, a repeated row name, an override path that does not exist, an
// ablation mixed with axes; an equal budget that cannot be matched) are
// returned; invalid cells are not errors, they are recorded in
// GridCell::invalid_reason.
//
// The ablation form makes the baseline cell 0 and one cell per row, with
// axis_labels = {ablation.label}. With equal_budget every valid cell but the
// baseline gets "<field>=<solved value>" as its last override (solved with
// the first seed; budgets do not depend on the seed). Hypotheses that select
// no cell, several or an invalid one, or are otherwise malformed, are errors
// (hypotheses.h), and so is a report_probes entry that is empty or repeated,
// or any entry when no cell sets train.probe_every (report_probes.h).
absl::StatusOr<ExpandedGrid> ExpandGrid(const GridSpec& spec, const std::string& grid_path,
                                        const std::string& working_dir);

// "N of M cells are invalid:" followed by one "  <cell>: <reason>" block
// per invalid cell; "" when all are valid.
std::string InvalidCellsReport(const ExpandedGrid& grid);

// True when the text's top-level fields include one that only a GridSpec
// has (base_spec, axis, seeds, ...): how the run binary tells a grid from a
// single experiment. Unparseable text counts as not a grid.
bool LooksLikeGridSpec(const std::string& text);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_GRID_LOADER_H_
