#include "framework/report/power.h"

#include <cmath>

#include "boost/math/distributions/chi_squared.hpp"
#include "boost/math/distributions/non_central_t.hpp"
#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"
#include "boost/math/quadrature/gauss_kronrod.hpp"

namespace tvlab {
namespace {

double DegreesOfFreedom(int n, const PowerDesign& design) { return design.paired ? n - 1.0 : 2.0 * n - 2.0; }

double Noncentrality(double d, int n, const PowerDesign& design) {
  return design.paired ? d * std::sqrt(static_cast<double>(n)) : d * std::sqrt(n / 2.0);
}

// TOST's power at a true difference of 0 (power.h). With w = sqrt(V), V
// chi-square(df): E_V[g(V)] = integral over w of 2 w f(w^2) g(w^2), finite
// at w = 0 for every df >= 1; the integrand is 0 past w = nc sqrt(df) / t.
double EquivalencePower(double nc, double df, double alpha) {
  const double critical = boost::math::quantile(boost::math::complement(boost::math::students_t(df), alpha));
  const double w_max = nc * std::sqrt(df) / critical;
  const boost::math::chi_squared chi2(df);
  const boost::math::normal standard;
  auto integrand = [&](double w) {
    if (w <= 0) return 0.0;
    const double shown = 2 * boost::math::cdf(standard, nc - critical * w / std::sqrt(df)) - 1;
    return shown > 0 ? 2 * w * boost::math::pdf(chi2, w * w) * shown : 0.0;
  };
  if (!(w_max > 0)) return 0;
  return boost::math::quadrature::gauss_kronrod<double, 61>::integrate(integrand, 0.0, w_max, 15, 1e-13);
}

}  // namespace

double TTestPower(double d, int n, const PowerDesign& design) {
  const double df = DegreesOfFreedom(n, design);
  const double nc = Noncentrality(d, n, design);
  if (design.equivalence) return EquivalencePower(nc, df, design.alpha);
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
