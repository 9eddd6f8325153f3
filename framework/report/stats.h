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

SeedStats Summarize(const std::vector<double>& values);

// "0.976 ± 0.004" with `digits` decimals; "0.976" when n == 1; "" when n == 0.
std::string FormatMeanStd(const SeedStats& s, int digits);
// "+0.012", "-0.671", "0.000" (no sign on zero at this precision).
std::string FormatDelta(double delta, int digits);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_STATS_H_
