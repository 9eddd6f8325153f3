#ifndef TVLAB_EXPERIMENTS_GRID_EXPAND_EQUAL_BUDGET_H_
#define TVLAB_EXPERIMENTS_GRID_EXPAND_EQUAL_BUDGET_H_

// Equal-budget grids (GridSpec.equal_budget): the value of one integer size
// field whose budget (parameters, training FLOPs per token or KV-cache bytes
// per token, from framework/report/cost_model.h) comes closest to a target.
//
// The solver assumes the budget does not decrease as the field grows (true
// of every size field of the cost model) and searches the valid values of
// the field: a value the spec's validator refuses (a d_model that num_heads
// does not divide, an odd head_dim under RoPE, ...) is skipped, so the
// solution always passes the normal validation.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"
#include "framework/schema/grid.pb.h"

namespace tvlab {

// The budget `which` of a resolved, validated spec (builds its model; the
// plugins must be linked in).
absl::StatusOr<double> BudgetOf(const Experiment& resolved, EqualBudget::Budget which);

// "parameters", "training FLOPs/token", "KV-cache bytes/token".
std::string BudgetName(EqualBudget::Budget which);

struct BudgetSolution {
  int64_t value = 0;     // of the field
  double budget = 0;     // at that value
  double target = 0;
  double deviation = 0;  // (budget - target) / target
  Experiment spec;       // resolved at that value
};

// Resolves the cell with field = value; an error means the value is invalid.
using ResolveAt = std::function<absl::StatusOr<Experiment>(int64_t value)>;

// Finds the valid value in [options.min_value, options.max_value] whose
// budget is closest to `target`. Errors name `cell`, the field, the closest
// value found and its deviation, and what to change: NotFound when no value
// near min_value is valid, InvalidArgument when the closest one misses the
// tolerance.
absl::StatusOr<BudgetSolution> SolveEqualBudget(const ResolveAt& resolve_at, double target,
                                                const EqualBudget& options, const std::string& cell);

// Checks the option itself: a budget kind, an integer field path, a
// tolerance >= 0, 1 <= min_value <= max_value. Errors name
// "equal_budget.<field>".
absl::Status CheckEqualBudget(const EqualBudget& options);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_EXPAND_EQUAL_BUDGET_H_
