#ifndef TVLAB_FRAMEWORK_REPORT_POWER_H_
#define TVLAB_FRAMEWORK_REPORT_POWER_H_

// Power of a t-test, and what it implies for the number of seeds.
//
// The power of the test at standardised effect d (the effect divided by the
// seed standard deviation: the pooled one for two groups, that of the
// per-seed differences when paired) with n seeds per cell is the
// probability that the statistic, a noncentral t, lands past the critical
// value:
//   two groups (equal n):  df = 2n - 2, noncentrality d sqrt(n / 2)
//   paired:                df = n - 1,  noncentrality d sqrt(n)
//   one-sided:  P(T > t_{df}(1 - alpha))
//   two-sided:  P(T > t_{df}(1 - alpha/2)) + P(T < -t_{df}(1 - alpha/2))
// This is statsmodels' TTestIndPower / TTestPower, i.e. the pooled-variance
// t-test's power; for Welch's test with equal n it is the usual
// approximation. The noncentral t CDF is Boost.Math's non_central_t (Debian's
// libboost-dev, header-only), checked against scipy.stats.nct in
// power_test.cc.

#include <optional>

#include "framework/report/significance.h"

namespace tvlab {

struct PowerDesign {
  bool paired = false;
  bool one_sided = false;
  double alpha = 0.05;  // the level each test is run at
};

// Power at standardised effect d >= 0 (in the direction a one-sided test
// looks in) with n >= 2 seeds per cell. REQUIRES: 0 < alpha < 1.
double TTestPower(double d, int n, const PowerDesign& design);

// The smallest standardised effect detected with probability `power` at n
// seeds per cell (bisection on d to 1e-10 relative). REQUIRES: n >= 2,
// 0 < power < 1.
double MinimumDetectableEffect(int n, const PowerDesign& design, double power = 0.8);

// The fewest seeds per cell (>= 2) whose power at standardised effect d
// reaches `power`; empty when more than max_n would be needed (or d <= 0).
std::optional<int> SeedsNeeded(double d, const PowerDesign& design, double power = 0.8, int max_n = 100000);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_POWER_H_
