#include "experiments/grid/expand/hypotheses.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/core/status_macros.h"
#include "framework/report/run_dir.h"
#include "google/protobuf/util/message_differencer.h"

namespace tvlab {
namespace {

// "ffn: relu, gelu, swiglu; ..." : every axis label with its values.
std::string ValidChoices(const ExpandedGrid& grid) {
  std::vector<std::string> parts;
  for (size_t column = 0; column < grid.axis_labels.size(); ++column) {
    std::vector<std::string> values;
    std::set<std::string> seen;
    for (const GridCell& c : grid.cells)
      if (seen.insert(c.axis_values[column]).second) values.push_back(c.axis_values[column]);
    parts.push_back(absl::StrCat(grid.axis_labels[column], "=", absl::StrJoin(values, "|")));
  }
  return absl::StrJoin(parts, "; ");
}

absl::StatusOr<int> OneCell(const ExpandedGrid& grid, const google::protobuf::RepeatedPtrField<std::string>& field,
                            const std::string& where) {
  const std::vector<std::string> selectors(field.begin(), field.end());
  if (selectors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " is empty; select one cell with \"<axis label>=<value>\" "
                                                          "pairs, the valid ones being: ", ValidChoices(grid)));
  }
  TVLAB_ASSIGN_OR_RETURN(std::vector<int> cells, SelectCells(grid, selectors, where));
  if (cells.size() != 1) {
    std::vector<std::string> labels;
    for (int c : cells) labels.push_back(grid.cells[c].label);
    return absl::InvalidArgumentError(absl::StrCat(
        where, " [", absl::StrJoin(selectors, ", "), "] selects ", cells.size(), " cells",
        cells.empty() ? "" : absl::StrCat(" (", absl::StrJoin(labels, "; "), ")"),
        "; it must select exactly one. Valid: ", ValidChoices(grid)));
  }
  if (!grid.cells[cells[0]].valid()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " selects cell '", grid.cells[cells[0]].label,
                                                   "', which is invalid: a hypothesis needs a cell that runs"));
  }
  return cells[0];
}

// A seed gives two cells the same batches when their task, batch size and
// gradient accumulation agree (TrainBatch(seed, step, batch_size) depends on
// nothing else), and the same random streams (RngStream(seed, purpose, ...))
// when their seeds agree.
absl::Status CheckPairable(const ExpandedGrid& grid, const GridHypothesis& h, const std::string& where) {
  const GridCell& a = grid.cells[h.cell_a];
  const GridCell& b = grid.cells[h.cell_b];
  auto fail = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".test: PAIRED_BY_SEED needs cells '", a.label, "' and '",
                                                   b.label, "' to share data order per seed, but ", what,
                                                   "; use test: WELCH"));
  };
  if (a.runs.size() != b.runs.size()) return fail("they have different numbers of seeds");
  for (size_t i = 0; i < a.runs.size(); ++i) {
    const Experiment& x = a.runs[i].spec;
    const Experiment& y = b.runs[i].spec;
    if (x.seed() != y.seed()) return fail("their seeds differ");
    if (!google::protobuf::util::MessageDifferencer::Equals(x.task(), y.task())) return fail("their `task` differs");
    if (x.train().batch_size() != y.train().batch_size()) return fail("their train.batch_size differs");
    if (x.train().grad_accumulation() != y.train().grad_accumulation())
      return fail("their train.grad_accumulation differs");
  }
  return absl::OkStatus();
}

absl::Status CheckDeclaration(const Hypothesis& h, const std::string& where) {
  if (h.direction() == Hypothesis::DIRECTION_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".direction is required: A_LESS, A_GREATER, EITHER (the expected sign of mean(A) - mean(B)) or "
        "EQUIVALENT (|mean(A) - mean(B)| < smallest_effect)"));
  }
  if (h.one_sided() && h.direction() == Hypothesis::EQUIVALENT) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".one_sided: an EQUIVALENT hypothesis is already two one-sided tests (TOST); remove one_sided"));
  }
  if (h.one_sided() && h.direction() == Hypothesis::EITHER) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".one_sided: a one-sided test needs direction A_LESS or A_GREATER, not EITHER"));
  }
  if (!(h.smallest_effect() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".smallest_effect must be > 0 (the smallest |mean(A) - mean(B)| worth detecting, in the metric's units)"));
  }
  if (!(h.alpha() > 0 && h.alpha() < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".alpha must be in (0, 1), e.g. 0.05; got ", h.alpha()));
  }
  if (h.direction() == Hypothesis::EQUIVALENT && !(h.alpha() < 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".alpha must be below 0.5 for EQUIVALENT (TOST shows equivalence with the (1 - 2 alpha) interval); got ",
        h.alpha()));
  }
  return absl::OkStatus();
}

absl::StatusOr<GridHypothesis> ResolveOne(const ExpandedGrid& grid, const Hypothesis& h, const std::string& where) {
  GridHypothesis out;
  out.spec = h;
  TVLAB_RETURN_IF_ERROR(CheckDeclaration(h, where));
  out.metric = h.metric().empty() ? grid.spec.main_metric() : h.metric();
  if (absl::Status known = CheckMetricName(out.metric); !known.ok())
    return absl::InvalidArgumentError(absl::StrCat(where, ".metric: ", known.message()));
  out.family = h.family().empty() ? "primary" : h.family();
  TVLAB_ASSIGN_OR_RETURN(out.cell_a, OneCell(grid, h.a(), where + ".a"));
  TVLAB_ASSIGN_OR_RETURN(out.cell_b, OneCell(grid, h.b(), where + ".b"));
  if (out.cell_a == out.cell_b) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a and b select the same cell '", grid.cells[out.cell_a].label, "'"));
  }
  if (out.paired()) TVLAB_RETURN_IF_ERROR(CheckPairable(grid, out, where));
  return out;
}

bool ValidName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

absl::StatusOr<std::vector<int>> SelectCells(const ExpandedGrid& grid, const std::vector<std::string>& selectors,
                                             const std::string& where) {
  std::vector<std::pair<size_t, std::string>> wanted;  // (column, value)
  for (const std::string& selector : selectors) {
    const size_t eq = selector.find('=');
    size_t column = 0;
    while (eq != std::string::npos && column < grid.axis_labels.size() &&
           grid.axis_labels[column] != selector.substr(0, eq))
      ++column;
    if (eq == std::string::npos || column == grid.axis_labels.size()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": '", selector,
                                                     "' is not \"<axis label>=<value>\" with a label of this grid. Valid: ",
                                                     ValidChoices(grid)));
    }
    wanted.emplace_back(column, selector.substr(eq + 1));
  }
  std::vector<int> out;
  for (size_t c = 0; c < grid.cells.size(); ++c) {
    bool all = true;
    for (const auto& [column, value] : wanted) all = all && grid.cells[c].axis_values[column] == value;
    if (all) out.push_back(static_cast<int>(c));
  }
  return out;
}

absl::Status ResolveHypotheses(ExpandedGrid* grid) {
  std::set<std::string> names;
  std::map<std::string, double> family_alpha;
  for (int i = 0; i < grid->spec.hypothesis_size(); ++i) {
    const Hypothesis& h = grid->spec.hypothesis(i);
    const std::string where = absl::StrCat("hypothesis[", i, "]");
    if (!ValidName(h.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".name: '", h.name(), "' must be non-empty letters, digits and '_'"));
    }
    if (!names.insert(h.name()).second)
      return absl::InvalidArgumentError(absl::StrCat(where, ".name: '", h.name(), "' is used twice; names are unique"));
    TVLAB_ASSIGN_OR_RETURN(GridHypothesis resolved, ResolveOne(*grid, h, where));
    auto [it, first] = family_alpha.emplace(resolved.family, h.alpha());
    if (!first && it->second != h.alpha()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".alpha ", h.alpha(), " differs from the alpha ",
                                                     it->second, " of another hypothesis of family '",
                                                     resolved.family, "'; a family has one error rate"));
    }
    grid->hypotheses.push_back(std::move(resolved));
  }
  return absl::OkStatus();
}

}  // namespace tvlab
