#include "framework/report/power.h"

#include <cmath>

#include "boost/math/distributions/non_central_t.hpp"
#include "boost/math/distributions/students_t.hpp"

namespace tvlab {
namespace {

double DegreesOfFreedom(int n, const PowerDesign& design) { return design.paired ? n - 1.0 : 2.0 * n - 2.0; }

double Noncentrality(double d, int n, const PowerDesign& design) {
  return design.paired ? d * std::sqrt(static_cast<double>(n)) : d * std::sqrt(n / 2.0);
}

}  // namespace

double TTestPower(double d, int n, const PowerDesign& design) {
  const double df = DegreesOfFreedom(n, design);
  const double nc = Noncentrality(d, n, design);
  const boost::math::students_t central(df);
  const double tail = design.one_sided ? design.alpha : design.alpha / 2;
  const double critical = boost::math::quantile(boost::math::complement(central, tail));
  if (nc == 0) return design.alpha;  // no effect: the test's size
  const boost::math::non_central_t shifted(df, nc);
  double power = boost::math::cdf(boost::math::complement(shifted, critical));
  if (!design.one_sided) power += boost::math::cdf(shifted, -critical);
  return power;
}

double MinimumDetectableEffect(int n, const PowerDesign& design, double power) {
  double low = 0, high = 1;
  while (TTestPower(high, n, design) < power) high *= 2;
  while (high - low > 1e-10 * high) {
    const double mid = (low + high) / 2;
    (TTestPower(mid, n, design) < power ? low : high) = mid;
  }
  return high;
}

std::optional<int> SeedsNeeded(double d, const PowerDesign& design, double power, int max_n) {
  if (!(d > 0)) return std::nullopt;
  // Power grows with n: double to bracket, then bisect on the integers.
  int low = 1, high = 2;
  while (TTestPower(d, high, design) < power) {
    if (high >= max_n) return std::nullopt;
    low = high;
    high = std::min(max_n, high * 2);
  }
  while (high - low > 1) {
    const int mid = low + (high - low) / 2;
    (TTestPower(d, mid, design) < power ? low : high) = mid;
  }
  return high;
}

}  // namespace tvlab
