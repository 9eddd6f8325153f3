#include "experiments/grid/expand/equal_budget.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/core/status_macros.h"
#include "framework/report/cost_model.h"

namespace tvlab {
namespace {

// A valid value of the field with its budget.
struct Point {
  int64_t value = 0;
  double budget = 0;
  Experiment spec;
};

// How many values past an invalid one are tried before giving up on a
// stretch (covers divisibility by up to this many heads).
constexpr int64_t kScan = 256;

class Search {
 public:
  Search(const ResolveAt& resolve_at, EqualBudget::Budget which) : resolve_at_(resolve_at), which_(which) {}

  // The first valid value in [from, to] going up (step +1) or down (-1),
  // at most kScan values away; nullopt when none. Budget errors on a valid
  // spec are real errors.
  absl::StatusOr<std::optional<Point>> Valid(int64_t from, int64_t to, int step) {
    for (int64_t v = from, tried = 0; (step > 0 ? v <= to : v >= to) && tried < kScan; v += step, ++tried) {
      auto spec = resolve_at_(v);
      if (!spec.ok()) continue;
      TVLAB_ASSIGN_OR_RETURN(double budget, BudgetOf(*spec, which_));
      return std::optional<Point>(Point{v, budget, *std::move(spec)});
    }
    return std::optional<Point>();
  }

 private:
  const ResolveAt& resolve_at_;
  EqualBudget::Budget which_;
};

std::string Percent(double deviation) { return absl::StrFormat("%+.2f%%", 100 * deviation); }

}  // namespace

std::string BudgetName(EqualBudget::Budget which) {
  switch (which) {
    case EqualBudget::PARAMETERS:
      return "parameters";
    case EqualBudget::TRAIN_FLOPS_PER_TOKEN:
      return "training FLOPs/token";
    case EqualBudget::KV_CACHE_BYTES_PER_TOKEN:
      return "KV-cache bytes/token";
    case EqualBudget::ACTIVE_PARAMETERS:
      return "active parameters";
    default:
      return "?";
  }
}

absl::StatusOr<double> BudgetOf(const Experiment& resolved, EqualBudget::Budget which) {
  TVLAB_ASSIGN_OR_RETURN(CostEstimate cost, CostOfExperiment(resolved));
  switch (which) {
    case EqualBudget::PARAMETERS:
      return static_cast<double>(cost.parameters);
    case EqualBudget::TRAIN_FLOPS_PER_TOKEN:
      return cost.train_flops_per_token;
    case EqualBudget::KV_CACHE_BYTES_PER_TOKEN:
      return static_cast<double>(cost.kv_cache_bytes_per_token);
    case EqualBudget::ACTIVE_PARAMETERS:
      return static_cast<double>(cost.active_parameters);
    default:
      return absl::InvalidArgumentError("equal_budget.match: not set");
  }
}

absl::Status CheckEqualBudget(const EqualBudget& options) {
  if (options.match() == EqualBudget::BUDGET_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "equal_budget.match is required: PARAMETERS, ACTIVE_PARAMETERS, TRAIN_FLOPS_PER_TOKEN or "
        "KV_CACHE_BYTES_PER_TOKEN");
  }
  if (options.field().empty()) {
    return absl::InvalidArgumentError(
        "equal_budget.field is required: the integer size field to solve for, e.g. \"model.d_ff\"");
  }
  if (!(options.tolerance() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("equal_budget.tolerance: ", options.tolerance(),
                                                   " must be >= 0 (a fraction: 0.01 is 1%)"));
  }
  if (options.min_value() < 1 || options.min_value() > options.max_value()) {
    return absl::InvalidArgumentError(absl::StrCat("equal_budget: min_value ", options.min_value(),
                                                   " and max_value ", options.max_value(),
                                                   " must satisfy 1 <= min_value <= max_value"));
  }
  return absl::OkStatus();
}

absl::StatusOr<BudgetSolution> SolveEqualBudget(const ResolveAt& resolve_at, double target,
                                                const EqualBudget& options, const std::string& cell) {
  Search search(resolve_at, options.match());
  const std::string what = BudgetName(options.match());
  const std::string& field = options.field();
  const int64_t min = options.min_value(), max = options.max_value();
  TVLAB_ASSIGN_OR_RETURN(std::optional<Point> low, search.Valid(min, max, +1));
  if (!low) {
    return absl::NotFoundError(absl::StrCat(
        "equal_budget: cell '", cell, "': no value of ", field, " from ", min, " to ", std::min(max, min + kScan - 1),
        " gives a valid spec; check the field and equal_budget.min_value"));
  }
  std::optional<Point> high;
  if (low->budget < target) {
    // Double until the budget reaches the target or the range ends.
    for (int64_t v = std::max<int64_t>(2 * low->value, low->value + 1);; v = v >= max / 2 ? max : 2 * v) {
      TVLAB_ASSIGN_OR_RETURN(std::optional<Point> p, search.Valid(std::min(v, max), max, +1));
      if (!p && v >= max) {
        TVLAB_ASSIGN_OR_RETURN(p, search.Valid(max, low->value + 1, -1));
      }
      if (p && p->budget >= target) {
        high = std::move(p);
        break;
      }
      if (p) low = std::move(p);
      if (v >= max) break;
    }
    // Bisect between the last valid value below the target and the first at
    // or above it.
    while (high && high->value - low->value > 1) {
      const int64_t mid = low->value + (high->value - low->value) / 2;
      TVLAB_ASSIGN_OR_RETURN(std::optional<Point> p, search.Valid(mid, high->value - 1, +1));
      if (!p) {
        TVLAB_ASSIGN_OR_RETURN(p, search.Valid(mid - 1, low->value + 1, -1));
      }
      if (!p) break;  // no valid value strictly between them
      (p->budget < target ? low : high) = std::move(p);
    }
  }
  Point best = *low;
  if (high && std::abs(high->budget - target) < std::abs(low->budget - target)) best = *high;
  BudgetSolution out;
  out.value = best.value;
  out.budget = best.budget;
  out.target = target;
  out.deviation = target != 0 ? (best.budget - target) / target : (best.budget == 0 ? 0 : INFINITY);
  out.spec = std::move(best.spec);
  if (!(std::abs(out.deviation) <= options.tolerance())) {
    std::string why;
    if (!high && low->budget < target) {
      why = absl::StrCat("; at ", field, "=", low->value, " (the largest valid value up to max_value ", max,
                         ") it is still ", Percent(out.deviation),
                         ": the field cannot move far enough: raise equal_budget.max_value or solve another field");
    } else if (low->value == best.value && low->budget >= target) {
      why = absl::StrCat("; even the smallest valid value is ", Percent(out.deviation),
                         " off: this field cannot shrink the budget enough: solve another field");
    } else {
      why = absl::StrCat("; the steps of ", field,
                         " are too coarse here: widen equal_budget.tolerance or solve a finer field");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "equal_budget: cell '", cell, "': cannot match the baseline's ", what, " (", absl::StrFormat("%.0f", target),
        ") within ", Percent(options.tolerance()).substr(1), " by solving ", field, ": closest is ", field, "=",
        out.value, " with ", absl::StrFormat("%.0f", out.budget), " (", Percent(out.deviation), ")", why));
  }
  return out;
}

}  // namespace tvlab
