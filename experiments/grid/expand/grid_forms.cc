#include "experiments/grid/expand/grid_forms.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/grid/expand/equal_budget.h"
#include "framework/core/status_macros.h"
#include "framework/spec/spec_overrides.h"
#include "google/protobuf/message.h"

namespace tvlab {
namespace {

// An override of an ablation that names no field, or one that does not
// exist, is a mistake in the grid, not an invalid cell.
absl::Status CheckOverride(const Experiment& base, const std::string& assignment, const std::string& where) {
  if (assignment.find('=') == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": '", assignment,
                                                   "' is not field=value, e.g. \"model.attention.layout=mla\""));
  }
  Experiment copy = base;
  absl::Status applied = ApplyOverride(&copy, assignment);
  if (!applied.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", applied.message()));
  return absl::OkStatus();
}

// The value of an integer field at a --set path, when the path walks plain
// message fields (not through a plugin's options Any).
std::optional<int64_t> IntegerAt(const google::protobuf::Message& message, const std::string& path) {
  const google::protobuf::Message* m = &message;
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    const google::protobuf::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(parts[i]);
    if (f == nullptr || f->is_repeated()) return std::nullopt;
    const google::protobuf::Reflection* r = m->GetReflection();
    if (i + 1 == parts.size()) {
      switch (f->cpp_type()) {
        case google::protobuf::FieldDescriptor::CPPTYPE_INT32: return r->GetInt32(*m, f);
        case google::protobuf::FieldDescriptor::CPPTYPE_INT64: return r->GetInt64(*m, f);
        case google::protobuf::FieldDescriptor::CPPTYPE_UINT32: return r->GetUInt32(*m, f);
        case google::protobuf::FieldDescriptor::CPPTYPE_UINT64: return static_cast<int64_t>(r->GetUInt64(*m, f));
        default: return std::nullopt;
      }
    }
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) return std::nullopt;
    m = &r->GetMessage(*m, f);
  }
  return std::nullopt;
}

}  // namespace

// The cells of the ablation form: the baseline (cell 0), then one per row.
absl::Status AblationCells(const GridSpec& spec, const Experiment& base, ExpandedGrid* grid) {
  const Ablation& ablation = spec.ablation();
  if (spec.axis_size() > 0 || spec.zip_size() > 0 || !spec.baseline().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the grid has both an ablation and ", spec.axis_size() > 0 ? "axis" : spec.zip_size() > 0 ? "zip" : "baseline",
        " fields: it is ambiguous which cell is the baseline and what a row is crossed with. Use one form: "
        "put every variant in an ablation row (rows may set several fields, e.g. set: "
        "[\"model.attention.layout=mla\", \"model.position.plugin=rope\"]) and the baseline's overrides in "
        "ablation.baseline; or drop the ablation and use axes with a top-level baseline"));
  }
  if (ablation.row().empty()) {
    return absl::InvalidArgumentError(
        "ablation has no row; add rows such as row { name: \"rope\" set: [\"model.position.plugin=rope\"] }");
  }
  // Overrides are checked on the base with `set` and the baseline applied,
  // as they will be applied.
  Experiment at_baseline = base;
  for (const std::string& o : spec.set()) {
    TVLAB_RETURN_IF_ERROR(CheckOverride(at_baseline, o, "set"));
    ApplyOverride(&at_baseline, o).IgnoreError();
  }
  for (int i = 0; i < ablation.baseline_size(); ++i) {
    TVLAB_RETURN_IF_ERROR(
        CheckOverride(at_baseline, ablation.baseline(i), absl::StrCat("ablation.baseline[", i, "]")));
    ApplyOverride(&at_baseline, ablation.baseline(i)).IgnoreError();
  }

  grid->axis_labels = {ablation.label()};
  GridCell baseline;
  baseline.label = ablation.baseline_name();
  baseline.axis_values = {baseline.label};
  baseline.overrides.assign(spec.set().begin(), spec.set().end());
  baseline.overrides.insert(baseline.overrides.end(), ablation.baseline().begin(), ablation.baseline().end());
  std::set<std::string> names = {baseline.label};
  grid->cells.push_back(baseline);
  for (int i = 0; i < ablation.row_size(); ++i) {
    const AblationRow& row = ablation.row(i);
    const std::string where = absl::StrCat("ablation.row[", i, "]", row.name().empty() ? "" : " (\"" + row.name() + "\")");
    if (row.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": name is required, e.g. name: \"rope\""));
    }
    if (!names.insert(row.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": the name '", row.name(), "' is used twice",
          row.name() == ablation.baseline_name() ? " (it is the baseline's name; see ablation.baseline_name)" : "",
          "; give every row its own name"));
    }
    if (row.set().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": set is empty, so the row would repeat the baseline; list what it changes, e.g. "
                 "set: [\"model.position.plugin=rope\"]"));
    }
    // Each override is checked after the row's earlier ones, as they will
    // be applied: a plugin's options exist once the row has chosen it
    // (set: ["model.attention.layout=gqa", "model.attention.layout_options.num_kv_heads=2"]).
    Experiment at_row = at_baseline;
    for (int j = 0; j < row.set_size(); ++j) {
      TVLAB_RETURN_IF_ERROR(CheckOverride(at_row, row.set(j), absl::StrCat(where, ".set[", j, "]")));
      ApplyOverride(&at_row, row.set(j)).IgnoreError();
    }
    GridCell cell;
    cell.label = row.name();
    cell.axis_values = {row.name()};
    cell.overrides = baseline.overrides;
    cell.overrides.insert(cell.overrides.end(), row.set().begin(), row.set().end());
    grid->cells.push_back(std::move(cell));
  }
  grid->baseline = 0;
  return absl::OkStatus();
}

// Solves equal_budget.field for every valid cell but the baseline; cells
// that fail validation are marked invalid here. All unmatchable cells are
// reported at once.
absl::Status MatchBudgets(const EqualBudget& options, const std::vector<std::string>& seed,
                          const CellResolver& resolve, ExpandedGrid* grid) {
  TVLAB_RETURN_IF_ERROR(CheckEqualBudget(options));
  if (grid->baseline < 0) {
    return absl::InvalidArgumentError(
        "equal_budget needs a baseline to match: set `baseline` (axes) or use the ablation form");
  }
  {
    Experiment probe;
    absl::Status path = ApplyOverride(&probe, absl::StrCat(options.field(), "=1"));
    if (!path.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("equal_budget.field '", options.field(),
                                                     "' is not an integer field: ", path.message()));
    }
  }
  GridCell& base_cell = grid->cells[grid->baseline];
  auto base_spec = resolve(base_cell, seed);
  if (!base_spec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("baseline cell '", base_cell.label, "' is invalid:\n",
                                                   IndentLines(CellReason(base_spec.status(), base_cell.label), "  ")));
  }
  TVLAB_ASSIGN_OR_RETURN(double target, BudgetOf(*base_spec, options.match()));
  base_cell.budget = BudgetMatch{options.field(), IntegerAt(*base_spec, options.field()), target, target, 0};
  std::vector<std::string> errors;
  for (size_t c = 0; c < grid->cells.size(); ++c) {
    GridCell& cell = grid->cells[c];
    if (static_cast<int>(c) == grid->baseline) continue;
    // The grid's `set` and an ablation's baseline may set the field (the
    // baseline's value); the cell's own overrides must not.
    for (const std::string& o : cell.overrides) {
      const bool shared = std::find(base_cell.overrides.begin(), base_cell.overrides.end(), o) !=
                          base_cell.overrides.end();
      if (!shared && o.rfind(options.field() + "=", 0) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cell '", cell.label, "' sets ", options.field(), " (", o, "), the field equal_budget solves for; "
            "solve another field or stop setting it"));
      }
    }
    ResolveAt at = [&](int64_t value) {
      std::vector<std::string> extra = seed;
      extra.push_back(absl::StrCat(options.field(), "=", value));
      return resolve(cell, extra);
    };
    // A cell invalid at the base's value may be valid at the solved one (a
    // row with 3 heads, solving d_model); one invalid at every value is an
    // invalid cell with its own reason, not a budget error.
    auto solved = SolveEqualBudget(at, target, options, cell.label);
    auto as_is = resolve(cell, seed);
    if (!solved.ok() && absl::IsNotFound(solved.status()) && !as_is.ok()) {
      cell.invalid_reason = CellReason(as_is.status(), cell.label);
      continue;
    }
    if (!solved.ok()) {
      errors.emplace_back(solved.status().message());
      continue;
    }
    cell.overrides.push_back(absl::StrCat(options.field(), "=", solved->value));
    cell.budget = BudgetMatch{options.field(), solved->value, solved->budget, target, solved->deviation};
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        errors.size(), " cell(s) cannot be matched to the baseline's budget; nothing was trained:\n  ",
        absl::StrJoin(errors, "\n  ")));
  }
  return absl::OkStatus();
}

// The column of the scaling axis; its values must be sizes when they are N.
absl::Status FindScalingAxis(const GridSpec& spec, ExpandedGrid* grid) {
  const Scaling& scaling = spec.scaling();
  if (spec.has_ablation()) {
    return absl::InvalidArgumentError(
        "scaling needs axes (a size axis crossed with the variants); an ablation grid has none. Use an axis for "
        "the variants and a zip or axis for the sizes");
  }
  // Columns in axis order: each axis, then each zip group's axes (a group
  // is one dimension: its columns move together).
  std::vector<std::string> fields;
  std::vector<int> group_of;
  for (const GridAxis& a : spec.axis()) fields.push_back(a.field()), group_of.push_back(static_cast<int>(fields.size()));
  for (int z = 0; z < spec.zip_size(); ++z)
    for (const GridAxis& a : spec.zip(z).axis()) fields.push_back(a.field()), group_of.push_back(-1 - z);
  for (size_t i = 0; i < grid->axis_labels.size(); ++i)
    if (grid->axis_labels[i] == scaling.axis() || (i < fields.size() && fields[i] == scaling.axis()))
      grid->scaling_column = static_cast<int>(i);
  if (grid->scaling_column >= 0) {
    for (size_t i = 0; i < group_of.size(); ++i)
      if (group_of[i] == group_of[grid->scaling_column]) grid->scaling_group.push_back(static_cast<int>(i));
  }
  if (grid->scaling_column < 0) {
    return absl::InvalidArgumentError(absl::StrCat("scaling.axis '", scaling.axis(),
                                                   "' is not an axis of the grid; the axes are ",
                                                   absl::StrJoin(grid->axis_labels, ", ")));
  }
  if (scaling.size() == Scaling::AXIS_VALUE) {
    for (const GridCell& c : grid->cells) {
      const std::string& v = c.axis_values[grid->scaling_column];
      double n = 0;
      if (!absl::SimpleAtod(v, &n) || !(n > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scaling.size AXIS_VALUE: the value '", v, "' of ", scaling.axis(),
            " is not a positive number; use size: PARAMETERS or a numeric axis"));
      }
    }
  }
  return absl::OkStatus();
}

// Indents a multi-line reason under its cell.
std::string IndentLines(const std::string& text, const std::string& prefix) {
  return absl::StrCat(prefix, absl::StrJoin(absl::StrSplit(text, '\n'), absl::StrCat("\n", prefix)));
}

// The problems of a cell, one per line, without ResolveExperiment's
// "<source>: invalid spec:" heading and indentation.
std::string CellReason(const absl::Status& status, const std::string& source) {
  std::string text(status.message());
  const std::string heading = source + ": invalid spec:\n";
  if (text.rfind(heading, 0) == 0) text = text.substr(heading.size());
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n'))
    lines.emplace_back(absl::StripLeadingAsciiWhitespace(line));
  return absl::StrJoin(lines, "\n");
}

}  // namespace tvlab
