#ifndef TVLAB_FRAMEWORK_REPORT_SCALING_FIT_H_
#define TVLAB_FRAMEWORK_REPORT_SCALING_FIT_H_

// Power-law scaling fits, loss = a * N^-b + c, by Levenberg–Marquardt least
// squares (a small solver: three parameters, a handful of points), with
// standard errors from the covariance s^2 (J^T J)^-1, s^2 = SSR / (n - 3) —
// what scipy.optimize.curve_fit reports with absolute_sigma=False — and the
// size at which two fitted curves cross.
//
// Internally N is scaled by the geometric mean of the sizes so that a is of
// order one; results are in the caller's units.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tvlab {

struct PowerLawFit {
  double a = 0, b = 0, c = 0;
  double a_se = 0, b_se = 0, c_se = 0;  // standard errors
  double ssr = 0;                       // sum of squared residuals
  int points = 0;
  int iterations = 0;
  double Predict(double n) const;
};

// Fits loss = a N^-b + c to the points (n[i], loss[i]); every n > 0. Errors:
// fewer than 4 points or fewer than 3 distinct sizes ("too few points ...:
// a three-parameter fit needs ..."), a non-positive size, non-finite values,
// or no convergence within `max_iterations` (the message says so and
// suggests more sizes).
absl::StatusOr<PowerLawFit> FitPowerLaw(const std::vector<double>& n, const std::vector<double>& loss,
                                        int max_iterations = 500);

// The sizes in [lo, hi] at which the two fitted curves are equal (sign
// changes of their difference on a log grid, refined by bisection), in
// increasing order. Empty when they do not cross there.
std::vector<double> CrossingSizes(const PowerLawFit& first, const PowerLawFit& second, double lo, double hi);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_SCALING_FIT_H_
