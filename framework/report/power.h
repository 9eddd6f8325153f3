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
  // An equivalence test (TOST, significance.h) instead: the effect d is the
  // standardised margin, power is at a true difference of 0, and one_sided
  // is ignored (each of the two one-sided tests runs at alpha).
  // REQUIRES then: alpha < 0.5.
  bool equivalence = false;
};

// Power at standardised effect d >= 0 (in the direction a one-sided test
// looks in) with n >= 2 seeds per cell. REQUIRES: 0 < alpha < 1.
//
// With design.equivalence, the probability that TOST shows |Delta| < margin
// = d sigma when the true Delta is 0. With nc the noncentrality above, Z
// the standardised estimate and V / df the variance ratio (chi-square):
// TOST rejects when |Z| < nc - t_{df}(1 - alpha) sqrt(V / df), so
//   power = E_V[ max(0, 2 Phi(nc - t_{df}(1 - alpha) sqrt(V / df)) - 1) ],
// the pooled-variance test's exact power (Owen 1965; R's PowerTOST),
// integrated numerically (Gauss-Kronrod over sqrt(V)).
double TTestPower(double d, int n, const PowerDesign& design);

// The smallest standardised effect detected with probability `power` at n
// seeds per cell (with design.equivalence: the smallest margin shown),
// by bisection on d to 1e-10 relative. REQUIRES: n >= 2, 0 < power < 1.
double MinimumDetectableEffect(int n, const PowerDesign& design, double power = 0.8);

// The fewest seeds per cell (>= 2) whose power at standardised effect d
// reaches `power`; empty when more than max_n would be needed (or d <= 0).
std::optional<int> SeedsNeeded(double d, const PowerDesign& design, double power = 0.8, int max_n = 100000);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_POWER_H_
