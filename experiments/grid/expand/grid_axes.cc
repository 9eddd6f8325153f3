#include "experiments/grid/expand/grid_axes.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/grid/expand/ladder_rungs.h"
#include "experiments/grid/expand/lr_sweep.h"
#include "framework/core/status_macros.h"

namespace tvlab {
namespace {

// One dimension of the product: a plain axis, or a zip group whose axes move
// together. Point i sets fields[j] = values[j][i] for every j.
struct Dimension {
  std::vector<std::string> fields;
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> values;  // [axis][point]
  size_t points() const { return values.empty() ? 0 : values[0].size(); }
};

absl::Status CheckAxis(const GridAxis& axis, const std::string& where) {
  if (axis.field().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": field is required, a path as --set takes it, e.g. field: \"model.num_heads\""));
  }
  if (axis.values().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " (", axis.field(), "): values is empty; list at least one, e.g. values: [\"4\", \"8\"]"));
  }
  std::set<std::string> seen;
  for (const std::string& v : axis.values()) {
    if (!seen.insert(v).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " (", axis.field(), "): value '", v, "' is listed twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Dimension>> Dimensions(const GridSpec& spec) {
  std::vector<Dimension> dims;
  for (int i = 0; i < spec.axis_size(); ++i) {
    const GridAxis& a = spec.axis(i);
    TVLAB_RETURN_IF_ERROR(CheckAxis(a, absl::StrCat("axis[", i, "]")));
    dims.push_back({{a.field()}, {a.label()}, {{a.values().begin(), a.values().end()}}});
  }
  for (int z = 0; z < spec.zip_size(); ++z) {
    const ZipAxes& zip = spec.zip(z);
    if (zip.axis().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("zip[", z, "] has no axis; give it two or more axis { field values }"));
    }
    Dimension d;
    for (int i = 0; i < zip.axis_size(); ++i) {
      const GridAxis& a = zip.axis(i);
      TVLAB_RETURN_IF_ERROR(CheckAxis(a, absl::StrCat("zip[", z, "].axis[", i, "]")));
      if (a.values_size() != zip.axis(0).values_size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "zip[", z, "]: ", a.field(), " has ", a.values_size(), " values but ",
            zip.axis(0).field(), " has ", zip.axis(0).values_size(),
            "; zipped axes pair their values one to one, so give them equally many"));
      }
      d.fields.push_back(a.field());
      d.labels.push_back(a.label());
      d.values.push_back({a.values().begin(), a.values().end()});
    }
    dims.push_back(std::move(d));
  }
  std::map<std::string, int> field_count;
  for (const Dimension& d : dims)
    for (const std::string& f : d.fields)
      if (++field_count[f] == 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field ", f, " is varied by two axes; list all its values in one axis"));
      }
  return dims;
}

// Column names: the explicit label, else the field's last component, else
// (when two fields end alike) the field path without "model.".
void NameAxes(std::vector<Dimension>* dims) {
  std::map<std::string, int> last_count;
  auto last = [](const std::string& f) { return f.substr(f.find_last_of('.') + 1); };
  for (const Dimension& d : *dims)
    for (const std::string& f : d.fields) ++last_count[last(f)];
  for (Dimension& d : *dims) {
    for (size_t j = 0; j < d.fields.size(); ++j) {
      if (!d.labels[j].empty()) continue;
      const std::string& f = d.fields[j];
      std::string full = f.rfind("model.", 0) == 0 ? f.substr(6) : f;
      d.labels[j] = last_count[last(f)] > 1 ? full : last(f);
    }
  }
}

absl::StatusOr<int> FindBaseline(const GridSpec& spec, const std::vector<Dimension>& dims,
                                 const std::vector<GridCell>& cells) {
  if (spec.baseline().empty()) return -1;
  // Each selector names an axis by field path or label.
  std::vector<std::pair<size_t, std::string>> wanted;  // (column, value)
  for (const std::string& selector : spec.baseline()) {
    size_t eq = selector.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "baseline '", selector, "': expected field=value, e.g. \"model.position.plugin=sinusoidal\""));
    }
    std::string key = selector.substr(0, eq), value = selector.substr(eq + 1);
    size_t column = 0;
    bool found = false;
    std::vector<std::string> known;
    for (const Dimension& d : dims)
      for (size_t j = 0; j < d.fields.size(); ++j, ++column) {
        known.push_back(d.fields[j]);
        if (!found && (d.fields[j] == key || d.labels[j] == key)) {
          wanted.emplace_back(column, value);
          found = true;
        }
      }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("baseline '", selector, "': no axis varies '", key,
                                                     "'; the axes are ", absl::StrJoin(known, ", ")));
    }
  }
  std::vector<int> matches;
  for (size_t c = 0; c < cells.size(); ++c) {
    bool all = true;
    for (const auto& [column, value] : wanted) all = all && cells[c].axis_values[column] == value;
    if (all) matches.push_back(static_cast<int>(c));
  }
  if (matches.size() != 1) {
    std::vector<std::string> labels;
    for (int m : matches) labels.push_back(cells[m].label);
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline [", absl::StrJoin(spec.baseline(), ", "), "] selects ", matches.size(),
        " cells", matches.empty() ? "" : absl::StrCat(" (", absl::StrJoin(labels, "; "), ")"),
        "; it must select exactly one: give a value for more axes"));
  }
  return matches[0];
}

// Two axes with one column name give cells "x=32 x=64" and two `x` columns.
absl::Status CheckLabelsDiffer(const std::vector<Dimension>& dims) {
  std::map<std::string, std::string> field_of_label;
  for (const Dimension& d : dims)
    for (size_t j = 0; j < d.fields.size(); ++j) {
      auto [it, inserted] = field_of_label.emplace(d.labels[j], d.fields[j]);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            "axes ", it->second, " and ", d.fields[j], " have the same label '", d.labels[j],
            "': cells and table columns would be ambiguous; give one of them another `label`"));
      }
    }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckGridSize(const GridSpec& spec) {
  if (spec.max_runs() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_runs: ", spec.max_runs(), " must be at least 1"));
  }
  std::vector<std::string> factors;
  double runs = 1;  // a double: 2,000 x 1,000 x 100,000 does not overflow
  auto factor = [&](const std::string& what, int64_t n) {
    runs *= static_cast<double>(std::max<int64_t>(n, 1));
    factors.push_back(absl::StrCat(what, ": ", n));
  };
  if (spec.has_ablation()) {
    factor("ablation rows + baseline", spec.ablation().row_size() + 1);
  } else {
    for (const GridAxis& a : spec.axis()) factor(a.field(), a.values_size());
    for (const ZipAxes& z : spec.zip())
      if (z.axis_size() > 0) factor(absl::StrCat("zip of ", z.axis(0).field()), z.axis(0).values_size());
  }
  if (spec.has_lr_sweep()) factor("lr_sweep values", LrSweepCount(spec.lr_sweep()));
  if (spec.has_ladder()) factor("ladder rungs", LadderRungCount(spec.ladder()));
  if (spec.seeds_size() > 0) factor("seeds", spec.seeds_size());
  if (runs <= static_cast<double>(spec.max_runs())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the grid expands to %.0f runs (%s), more than max_runs %d; list fewer values or seeds, split the "
      "study into several grids, or raise max_runs if you mean it",
      runs, absl::StrJoin(factors, " x "), spec.max_runs()));
}

absl::Status AxisCells(const GridSpec& spec, ExpandedGrid* grid) {
  TVLAB_ASSIGN_OR_RETURN(std::vector<Dimension> dims, Dimensions(spec));
  NameAxes(&dims);
  TVLAB_RETURN_IF_ERROR(CheckLabelsDiffer(dims));
  for (const Dimension& d : dims) grid->axis_labels.insert(grid->axis_labels.end(), d.labels.begin(), d.labels.end());
  for (const Dimension& d : dims)
    for (const std::string& f : d.fields)
      if (f == "seed" && !spec.seeds().empty()) {
        return absl::InvalidArgumentError(
            "an axis varies 'seed' and the grid also lists seeds; list the seeds in `seeds` only");
      }
  size_t total = 1;
  for (const Dimension& d : dims) total *= d.points();
  for (size_t index = 0; index < total; ++index) {
    GridCell cell;
    cell.overrides.assign(spec.set().begin(), spec.set().end());
    std::vector<std::string> parts;
    // Mixed radix, last dimension fastest.
    std::vector<size_t> point(dims.size());
    for (size_t rest = index, k = dims.size(); k-- > 0;) {
      point[k] = rest % dims[k].points();
      rest /= dims[k].points();
    }
    for (size_t k = 0; k < dims.size(); ++k) {
      for (size_t j = 0; j < dims[k].fields.size(); ++j) {
        const std::string& value = dims[k].values[j][point[k]];
        cell.overrides.push_back(absl::StrCat(dims[k].fields[j], "=", value));
        cell.axis_values.push_back(value);
        parts.push_back(absl::StrCat(dims[k].labels[j], "=", value));
      }
    }
    cell.label = parts.empty() ? "base" : absl::StrJoin(parts, " ");
    grid->cells.push_back(std::move(cell));
  }
  TVLAB_ASSIGN_OR_RETURN(grid->baseline, FindBaseline(spec, dims, grid->cells));
  return absl::OkStatus();
}

}  // namespace tvlab
