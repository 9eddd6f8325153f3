#include "experiments/grid/expand/lr_sweep.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/core/status_macros.h"
#include "framework/spec/spec_overrides.h"

namespace tvlab {
namespace {

constexpr const char* kLowerBetter[] = {"eval_loss", "perplexity", "perplexity_per_byte", "bits_per_byte"};
constexpr const char* kHigherBetter[] = {"token_accuracy", "sequence_accuracy", "accuracy", "exact_match",
                                         "bleu"};

bool SetsField(const std::string& assignment, const std::string& field) {
  return assignment.rfind(field + "=", 0) == 0;
}

// No other part of the grid may set the swept field: the sweep's override
// comes last and would silently replace it.
absl::Status CheckNotVaried(const GridSpec& spec, const std::string& field) {
  const std::string fix = "; remove it there, or sweep another field (lr_sweep.field)";
  for (const GridAxis& a : spec.axis())
    if (a.field() == field) return absl::InvalidArgumentError(absl::StrCat("lr_sweep.field ", field, " is also an axis", fix));
  for (const ZipAxes& z : spec.zip())
    for (const GridAxis& a : z.axis())
      if (a.field() == field)
        return absl::InvalidArgumentError(absl::StrCat("lr_sweep.field ", field, " is also a zipped axis", fix));
  for (const std::string& o : spec.set())
    if (SetsField(o, field)) return absl::InvalidArgumentError(absl::StrCat("lr_sweep.field ", field, " is also in `set` (", o, ")", fix));
  for (const std::string& o : spec.ablation().baseline())
    if (SetsField(o, field))
      return absl::InvalidArgumentError(absl::StrCat("lr_sweep.field ", field, " is also set by ablation.baseline (", o, ")", fix));
  for (const AblationRow& row : spec.ablation().row())
    for (const std::string& o : row.set())
      if (SetsField(o, field))
        return absl::InvalidArgumentError(
            absl::StrCat("lr_sweep.field ", field, " is also set by ablation row '", row.name(), "' (", o, ")", fix));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> LrSweepValues(const LrSweep& sweep) {
  std::vector<double> values(sweep.values().begin(), sweep.values().end());
  if (sweep.has_log_space()) {
    const LogSpace& s = sweep.log_space();
    if (!values.empty())
      return absl::InvalidArgumentError("lr_sweep: give either values or log_space, not both");
    if (!(s.min() > 0) || !(s.max() > s.min()) || !std::isfinite(s.max()) || s.count() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lr_sweep.log_space: needs 0 < min < max and count >= 2 (got min ", s.min(), ", max ", s.max(), ", count ",
          s.count(), "), e.g. log_space { min: 1e-4 max: 1e-2 count: 5 }"));
    }
    for (int i = 0; i < s.count(); ++i)
      values.push_back(s.min() * std::pow(s.max() / s.min(), static_cast<double>(i) / (s.count() - 1)));
  }
  if (values.size() < 2) {
    return absl::InvalidArgumentError(
        "lr_sweep: a sweep needs at least 2 values to choose from; list values: [1e-3, 3e-3, 1e-2] or use "
        "log_space { min max count }");
  }
  std::vector<std::string> out;
  std::sort(values.begin(), values.end());
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("lr_sweep.values: ", v, " is not a positive learning rate; every value must be > 0"));
    }
    out.push_back(absl::StrFormat("%.3g", v));
  }
  if (std::set<std::string>(out.begin(), out.end()).size() != out.size()) {
    return absl::InvalidArgumentError(absl::StrCat("lr_sweep: values [", absl::StrJoin(out, ", "),
                                                   "] repeat one (to 3 significant digits); list each once"));
  }
  return out;
}

absl::StatusOr<bool> LrSweepLowerIsBetter(const std::string& metric) {
  const size_t at = metric.find('@');  // perplexity@1024
  int length = 0;
  const bool length_ok = at == std::string::npos || (absl::SimpleAtoi(metric.substr(at + 1), &length) && length > 0);
  for (const char* m : kLowerBetter)
    if (metric.substr(0, at) == m && length_ok) return true;
  for (const char* m : kHigherBetter)
    if (metric == m) return false;
  std::vector<std::string> held_out(std::begin(kLowerBetter), std::end(kLowerBetter));
  held_out.insert(held_out.end(), std::begin(kHigherBetter), std::end(kHigherBetter));
  return absl::InvalidArgumentError(absl::StrCat(
      "lr_sweep.metric '", metric, "' is not a held-out metric (a learning rate picked on training data ",
      "or on a cost favours overfitting); use one measured on the evaluation split: ",
      absl::StrJoin(held_out, ", "), " (or METRIC@LENGTH of the first four)"));
}

absl::Status CrossLrSweep(const GridSpec& spec, const Experiment& base, ExpandedGrid* grid) {
  const LrSweep& sweep = spec.lr_sweep();
  if (sweep.field().empty()) {
    return absl::InvalidArgumentError(
        "lr_sweep.field is required: the learning-rate field as --set takes it, e.g. "
        "field: \"train.optimizer.adamw.lr\"");
  }
  TVLAB_ASSIGN_OR_RETURN(std::vector<std::string> values, LrSweepValues(sweep));
  TVLAB_RETURN_IF_ERROR(LrSweepLowerIsBetter(sweep.metric()).status());
  TVLAB_RETURN_IF_ERROR(CheckNotVaried(spec, sweep.field()));
  if (spec.has_scaling()) {
    return absl::InvalidArgumentError(
        "lr_sweep and scaling in one grid are not supported (which value would each size's fit use?); "
        "sweep in one grid, then fit the scaling curve at the chosen values in another");
  }
  if (spec.hypothesis_size() > 0 || spec.has_seeds_for_power()) {
    return absl::InvalidArgumentError(
        "lr_sweep with hypothesis or seeds_for_power in one grid is not supported yet (a contrast "
        "would compare cells at one swept value, not each variant at its own tuned value); sweep in "
        "one grid, then declare the hypotheses in a second grid that sets each variant's chosen rate");
  }
  Experiment probe = base;  // with `set`, which may choose the optimizer plugin whose field is swept
  for (const std::string& o : spec.set()) ApplyOverride(&probe, o).IgnoreError();
  absl::Status exists = ApplyOverride(&probe, absl::StrCat(sweep.field(), "=", values[0]));
  if (!exists.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("lr_sweep.field '", sweep.field(), "': ", exists.message(),
                                                   "; give the optimizer's learning-rate path, e.g. "
                                                   "train.optimizer.adamw.lr"));
  }
  const std::string column = sweep.field().substr(sweep.field().find_last_of('.') + 1);
  if (std::find(grid->axis_labels.begin(), grid->axis_labels.end(), column) != grid->axis_labels.end()) {
    return absl::InvalidArgumentError(absl::StrCat("lr_sweep: an axis is already labelled '", column,
                                                   "'; give that axis another `label`"));
  }
  if (grid->baseline >= 0) grid->lr_baseline = grid->cells[grid->baseline].label;
  grid->baseline = -1;
  grid->lr_column = static_cast<int>(grid->axis_labels.size());
  grid->axis_labels.push_back(column);
  std::vector<GridCell> crossed;
  for (const GridCell& cell : grid->cells) {
    for (const std::string& v : values) {
      GridCell c = cell;
      c.label = absl::StrCat(cell.label, cell.label.empty() ? "" : " ", column, "=", v);
      c.axis_values.push_back(v);
      c.overrides.push_back(absl::StrCat(sweep.field(), "=", v));
      crossed.push_back(std::move(c));
    }
  }
  grid->cells = std::move(crossed);
  return absl::OkStatus();
}

}  // namespace tvlab
