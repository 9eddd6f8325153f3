#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_SCALING_REPORT_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_SCALING_REPORT_H_

// A grid's scaling curves (GridSpec.scaling): per variant (the cells that
// share every axis value but the scaling axis's), loss = a·N^-b + c fitted
// over its finished seeds (framework/report/scaling_fit.h); the exponents
// with their standard errors, where two variants' curves cross, and a
// log-log plot of the points and the fitted lines.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/report/grid_results.h"
#include "framework/report/scaling_fit.h"

namespace tvlab {

struct VariantScaling {
  std::string variant;             // "position=rope", or "all" with one axis
  std::vector<double> n, loss;     // one point per finished seed
  absl::StatusOr<PowerLawFit> fit = absl::UnknownError("not fitted");
};

// Empty without spec.scaling.
std::vector<VariantScaling> FitScaling(const GridResults& results);

// The "## Scaling" section of results.md: a row per variant (points, b ±
// se, a, c, or why there is no fit) and the crossings within the sizes
// measured.
std::string ScalingMarkdown(const GridResults& results, const std::vector<VariantScaling>& fits);

// scaling.svg: points and fitted curves, log-log.
std::string ScalingSvg(const GridResults& results, const std::vector<VariantScaling>& fits);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_SCALING_REPORT_H_
