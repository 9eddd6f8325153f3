#ifndef TVLAB_FRAMEWORK_REPORT_STATS_H_
#define TVLAB_FRAMEWORK_REPORT_STATS_H_

// Summary statistics over the seeds of one grid cell.

#include <string>
#include <vector>

namespace tvlab {

struct SeedStats {
  int n = 0;
  double mean = 0;
  // Sample standard deviation (n - 1 in the denominator, as numpy's
  // std(ddof=1) and pandas' default); 0 when n < 2.
  double std = 0;
};

// Any finite values, however large: above kLargeStatisticValue in magnitude
// the sums run on values divided by the largest magnitude (a diverged run's
// eval_loss near FLT_MAX, a corrupt 1e308), so no square overflows; below it
// the arithmetic is the plain one. A non-finite value makes mean and std NaN.
SeedStats Summarize(const std::vector<double>& values);

// Above this magnitude a squared deviation can overflow a double.
inline constexpr double kLargeStatisticValue = 1e150;
// 1, or the largest magnitude among `groups` when it is above
// kLargeStatisticValue: the divisor that keeps sums and squares finite.
double StatisticScale(const std::vector<const std::vector<double>*>& groups);

// "0.976 ± 0.004" with `digits` decimals; "0.976" when n == 1; "" when n == 0.
std::string FormatMeanStd(const SeedStats& s, int digits);
// "+0.012", "-0.671", "0.000" (no sign on zero at this precision).
std::string FormatDelta(double delta, int digits);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_STATS_H_
