#include "experiments/grid/expand/ladder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/core/status_macros.h"
#include "framework/spec/spec_overrides.h"

namespace tvlab {
namespace {

absl::Status Bad(const std::string& text) { return absl::InvalidArgumentError(text); }

// The other grid forms, each refused with why it does not compose.
absl::Status CheckComposes(const GridSpec& spec) {
  if (spec.has_scaling())
    return Bad("ladder and scaling in one grid: the ladder is the size axis and fits its own curves; remove scaling");
  if (spec.has_lr_sweep()) {
    return Bad("ladder and lr_sweep in one grid are not supported (which swept rate would each rung's point use?); "
               "sweep the rate in one grid, then set each variant's chosen rate in the ladder grid");
  }
  if (spec.has_equal_budget()) {
    return Bad("ladder and equal_budget in one grid: the ladder sets the size fields equal_budget would solve, and "
               "its rungs differ in budget by design; compare the variants along the ladder instead");
  }
  if (spec.hypothesis_size() > 0 || spec.has_seeds_for_power()) {
    return Bad("ladder with hypothesis or seeds_for_power in one grid is not supported (a contrast compares two "
               "cells at one size, not two variants along the ladder); name the two variants in ladder.compare");
  }
  return absl::OkStatus();
}

bool SetsField(const std::string& assignment, const std::string& field) {
  return assignment.rfind(field + "=", 0) == 0;
}

// No other part of the grid may set a field the ladder sets: its overrides
// come last and would silently replace the variant's value.
absl::Status CheckNotVaried(const GridSpec& spec) {
  for (const std::string& field : LadderFields(spec.ladder())) {
    const std::string fix = absl::StrCat(" ", field, ", which the ladder sets on every cell; remove it there");
    for (const GridAxis& a : spec.axis())
      if (a.field() == field) return Bad(absl::StrCat("ladder: an axis varies", fix));
    for (const ZipAxes& z : spec.zip())
      for (const GridAxis& a : z.axis())
        if (a.field() == field) return Bad(absl::StrCat("ladder: a zipped axis varies", fix));
    for (const std::string& o : spec.set())
      if (SetsField(o, field)) return Bad(absl::StrCat("ladder: `set` (", o, ") sets", fix));
    for (const std::string& o : spec.ablation().baseline())
      if (SetsField(o, field)) return Bad(absl::StrCat("ladder: ablation.baseline (", o, ") sets", fix));
    for (const AblationRow& row : spec.ablation().row())
      for (const std::string& o : row.set())
        if (SetsField(o, field))
          return Bad(absl::StrCat("ladder: ablation row '", row.name(), "' (", o, ") sets", fix));
  }
  return absl::OkStatus();
}

std::string VariantOf(const GridCell& cell) { return cell.label.empty() ? "base" : cell.label; }

}  // namespace

std::string LadderVariantLabel(const ExpandedGrid& grid, const GridCell& cell) {
  if (grid.ladder_column < 0) return VariantOf(cell);
  const std::string suffix =
      absl::StrCat(grid.axis_labels[grid.ladder_column], "=", cell.axis_values[grid.ladder_column]);
  std::string label = cell.label.substr(0, cell.label.size() - std::min(suffix.size(), cell.label.size()));
  if (!label.empty() && label.back() == ' ') label.pop_back();
  return label.empty() ? "base" : label;
}

absl::Status CrossLadder(const GridSpec& spec, const Experiment& base, ExpandedGrid* grid) {
  const Ladder& ladder = spec.ladder();
  TVLAB_RETURN_IF_ERROR(CheckLadder(ladder));
  TVLAB_RETURN_IF_ERROR(CheckComposes(spec));
  TVLAB_RETURN_IF_ERROR(CheckNotVaried(spec));
  const std::string column = LadderColumn(ladder);
  if (std::find(grid->axis_labels.begin(), grid->axis_labels.end(), column) != grid->axis_labels.end())
    return Bad(absl::StrCat("ladder: an axis is already labelled '", column, "'; give that axis another `label`"));
  std::vector<std::string> variants;
  for (const GridCell& cell : grid->cells) variants.push_back(VariantOf(cell));
  for (const std::string& c : ladder.compare()) {
    if (std::find(variants.begin(), variants.end(), c) == variants.end()) {
      return Bad(absl::StrCat("ladder.compare: '", c, "' is not a variant of this grid; the variants are: '",
                              absl::StrJoin(variants, "', '"), "'"));
    }
  }
  const std::vector<std::string> names = LadderRungNames(ladder);
  std::vector<std::string> problems;
  std::vector<GridCell> crossed;
  for (const GridCell& cell : grid->cells) {
    // The variant's own settings, unvalidated: its base size may be invalid
    // (a head count that does not divide the base's d_model) where the
    // rungs' are not.
    Experiment probe = base;
    for (const std::string& o : cell.overrides) ApplyOverride(&probe, o).IgnoreError();
    if (probe.train().eval_every() <= 0) {
      problems.push_back(absl::StrCat(
          "variant '", VariantOf(cell), "': train.eval_every is ", probe.train().eval_every(),
          "; the ladder finds target_loss on the evaluation curve: set it, e.g. set: \"train.eval_every=10\""));
      continue;
    }
    for (int i = 0; i < static_cast<int>(names.size()); ++i) {
      auto size = LadderRungSize(ladder, i, probe.model().num_heads(), VariantOf(cell));
      if (!size.ok()) {
        problems.push_back(std::string(size.status().message()));
        continue;
      }
      GridCell c = cell;
      c.label = absl::StrCat(cell.label, cell.label.empty() ? "" : " ", column, "=", names[i]);
      c.axis_values.push_back(names[i]);
      for (const std::string& o : RungOverrides(*size)) c.overrides.push_back(o);
      crossed.push_back(std::move(c));
    }
  }
  if (!problems.empty()) {
    return Bad(absl::StrCat("ladder: ", problems.size(), " problem(s) with the variants' rungs; nothing was trained:\n  ",
                            absl::StrJoin(problems, "\n  ")));
  }
  grid->baseline = -1;
  grid->ladder_column = static_cast<int>(grid->axis_labels.size());
  grid->axis_labels.push_back(column);
  grid->cells = std::move(crossed);
  return absl::OkStatus();
}

}  // namespace tvlab
