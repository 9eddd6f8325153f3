#ifndef TVLAB_FRAMEWORK_REPORT_SIGNIFICANCE_H_
#define TVLAB_FRAMEWORK_REPORT_SIGNIFICANCE_H_

// Is a grid cell's difference from the baseline more than seed noise?
//
//   WelchTest          delta of means, its 95% CI and the two-sided p-value of
//                      Welch's unequal-variance t-test, with Welch–Satterthwaite
//                      degrees of freedom (scipy.stats.ttest_ind(a, b,
//                      equal_var=False) gives the same t and p)
//   BootstrapDeltaCi   percentile bootstrap CI of the delta of means: each
//                      group resampled with replacement, B times, from a fixed
//                      seed (so a table is reproducible bit for bit)
//   HolmAdjust         Holm's step-down correction of a family of p-values
//                      (the grid's cells against the baseline)
//
// The Student-t CDF and quantile come from Boost.Math (Debian's
// libboost-dev, header-only), not from hand-written special functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tvlab {

struct WelchResult {
  int n_a = 0, n_b = 0;
  double delta = 0;  // mean(a) - mean(b)
  // Defined only when both groups have n >= 2 and the pooled standard error
  // is > 0 (with identical values in both groups there is nothing to test).
  bool defined = false;
  double standard_error = 0;  // sqrt(var_a/n_a + var_b/n_b), sample variances
  double df = 0;              // Welch–Satterthwaite
  double t = 0;               // delta / standard_error
  double p = 1;               // two-sided
  double ci_low = 0, ci_high = 0;  // delta ± t_{df}(1 - alpha/2) * standard_error
  std::string why_undefined;        // when !defined: "fewer than 2 seeds in ...", ...
};

// Welch's t-test of mean(a) against mean(b) with a (1 - alpha) CI of the
// delta. REQUIRES: 0 < alpha < 1.
WelchResult WelchTest(const std::vector<double>& a, const std::vector<double>& b, double alpha = 0.05);

struct BootstrapCi {
  double low = 0, high = 0;
  int resamples = 0;  // B
  uint64_t seed = 0;
};

// Percentile bootstrap (1 - alpha) CI of mean(a) - mean(b): B resamples of
// each group with replacement (std::mt19937_64 seeded with `seed`), the
// alpha/2 and 1 - alpha/2 quantiles of the B deltas (linear interpolation
// between order statistics, numpy's default). Empty when a group is empty.
std::optional<BootstrapCi> BootstrapDeltaCi(const std::vector<double>& a, const std::vector<double>& b,
                                            int resamples = 10000, uint64_t seed = 20240611,
                                            double alpha = 0.05);

// Holm (1979): sort the m p-values ascending, p_(i) -> (m - i + 1) * p_(i)
// (1-based i), made non-decreasing in that order and capped at 1. A
// hypothesis is rejected at family-wise level alpha when its adjusted p is
// below alpha. Returns the adjusted p-values in the input order.
std::vector<double> HolmAdjust(const std::vector<double>& p);

// The alternative of a t-test on delta = A - B.
enum class Sides {
  kTwoSided,  // delta != 0
  kLess,      // delta < 0 (one-sided)
  kGreater,   // delta > 0 (one-sided)
};

// The p-value of statistic `t` with `df` degrees of freedom under the
// alternative `sides` (scipy.stats.ttest_*'s `alternative`: "two-sided",
// "less", "greater"). REQUIRES: df > 0, t finite.
double TTestP(double t, double df, Sides sides);

// Two one-sided tests (TOST; Schuirmann 1987) of equivalence within
// +-margin, from an estimate `delta` with standard error `standard_error`
// and `df` degrees of freedom (a Welch or a paired test's): equivalence is
// shown at level alpha when both one-sided nulls are rejected at alpha, i.e.
// when p = max(p_lower, p_upper) < alpha, i.e. when the (1 - 2 alpha) CI of
// delta lies inside (-margin, margin). As scipy: p_lower is
// ttest(a + margin, b, alternative="greater"), p_upper ttest(a - margin, b,
// alternative="less"). REQUIRES: standard_error > 0, df > 0, margin > 0.
struct TostResult {
  double t_lower = 0, p_lower = 1;  // H0: delta <= -margin; t = (delta + margin) / se
  double t_upper = 0, p_upper = 1;  // H0: delta >= +margin; t = (delta - margin) / se
  double p = 1;                     // max(p_lower, p_upper)
  double t = 0;                     // the t of the larger p (the binding side)
};
TostResult Tost(double delta, double standard_error, double df, double margin);

// Paired t-test on d_i = a[i] - b[i] (a and b the same seeds, in the same
// order), as scipy.stats.ttest_rel(a, b): df = n - 1, t = mean(d) / (sd(d)
// / sqrt(n)), two-sided p, and the (1 - alpha) CI of mean(d). d_z =
// mean(d) / sd(d) is its effect size (Cohen's d for paired samples).
struct PairedResult {
  int n = 0;         // pairs
  double delta = 0;  // mean(a[i] - b[i])
  // Defined when n >= 2 and sd(d) > 0.
  bool defined = false;
  double sd_diff = 0;  // sample standard deviation of the differences
  double standard_error = 0, df = 0, t = 0, p = 1;
  double ci_low = 0, ci_high = 0;
  double d_z = 0;
  std::string why_undefined;
};
// REQUIRES: a.size() == b.size(), 0 < alpha < 1.
PairedResult PairedTest(const std::vector<double>& a, const std::vector<double>& b, double alpha = 0.05);

// Cohen's d of two groups: (mean(a) - mean(b)) / the pooled standard
// deviation sqrt(((n_a-1) s_a^2 + (n_b-1) s_b^2) / (n_a + n_b - 2)). NaN
// when a group has fewer than 2 values or the pooled deviation is 0.
double CohensD(const std::vector<double>& a, const std::vector<double>& b);
// That pooled standard deviation (NaN when a group has < 2 values).
double PooledStd(const std::vector<double>& a, const std::vector<double>& b);

// Smallest number of seeds per cell below which the table warns.
inline constexpr int kMinSeedsForSignificance = 3;
// Seeds per cell from which the bootstrap interval is shown.
inline constexpr int kMinSeedsForBootstrap = 5;

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_SIGNIFICANCE_H_
