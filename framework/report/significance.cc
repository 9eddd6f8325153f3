#include "framework/report/significance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "boost/math/distributions/students_t.hpp"
#include "framework/report/stats.h"

namespace tvlab {
namespace {

double Mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

// Sample variance (n - 1). REQUIRES: v.size() >= 2.
double Variance(const std::vector<double>& v, double mean) {
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return squares / (v.size() - 1);
}

// numpy.quantile(sorted, q) with the default linear method.
double Quantile(const std::vector<double>& sorted, double q) {
  const double position = q * (sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - below;
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

bool AllFinite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

std::vector<double> Scaled(const std::vector<double>& v, double scale) {
  std::vector<double> out(v);
  for (double& x : out) x /= scale;
  return out;
}

}  // namespace

WelchResult WelchTest(const std::vector<double>& a, const std::vector<double>& b, double alpha) {
  WelchResult r;
  r.n_a = static_cast<int>(a.size());
  r.n_b = static_cast<int>(b.size());
  if (a.empty() || b.empty()) {
    r.why_undefined = "a group has no finished seeds";
    return r;
  }
  if (!AllFinite(a) || !AllFinite(b)) {
    r.why_undefined = "a value is not finite (NaN or infinite): no mean to test";
    return r;
  }
  // Sums and squares in units of `scale` (1 unless a value is beyond 1e150):
  // t and df do not depend on the unit; delta and the interval are scaled back.
  const double scale = StatisticScale({&a, &b});
  const std::vector<double> sa = Scaled(a, scale), sb = Scaled(b, scale);
  const double mean_a = Mean(sa), mean_b = Mean(sb);
  r.delta = (mean_a - mean_b) * scale;
  if (a.size() < 2 || b.size() < 2) {
    r.why_undefined = "fewer than 2 seeds: no variance to test against";
    return r;
  }
  const double va = Variance(sa, mean_a) / a.size(), vb = Variance(sb, mean_b) / b.size();
  const double se = std::sqrt(va + vb);
  if (!(se > 0)) {
    r.why_undefined = "every seed gave the same value in both groups: no variance to test against";
    return r;
  }
  r.standard_error = se * scale;
  r.df = (va + vb) * (va + vb) / (va * va / (a.size() - 1) + vb * vb / (b.size() - 1));
  r.t = (mean_a - mean_b) / se;
  if (!std::isfinite(r.df) || !(r.df > 0) || !std::isfinite(r.t)) {
    r.why_undefined = "the variances under- or overflow a double: no t statistic";
    return r;
  }
  boost::math::students_t dist(r.df);
  r.p = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::abs(r.t))));
  const double half = boost::math::quantile(boost::math::complement(dist, alpha / 2)) * se;
  r.ci_low = (mean_a - mean_b - half) * scale;
  r.ci_high = (mean_a - mean_b + half) * scale;
  if (!std::isfinite(r.delta) || !std::isfinite(r.ci_low) || !std::isfinite(r.ci_high)) {
    r.why_undefined = "the difference or its interval is beyond a double's range (values near 1.8e308)";
    return r;
  }
  r.defined = true;
  return r;
}

std::optional<BootstrapCi> BootstrapDeltaCi(const std::vector<double>& a, const std::vector<double>& b,
                                            int resamples, uint64_t seed, double alpha) {
  if (a.empty() || b.empty() || resamples < 1) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  const double scale = StatisticScale({&a, &b});  // 1 unless a value is beyond 1e150
  std::vector<double> deltas(resamples);
  for (double& d : deltas) {
    double sum_a = 0, sum_b = 0;
    for (size_t i = 0; i < a.size(); ++i) sum_a += a[pick_a(rng)] / scale;
    for (size_t i = 0; i < b.size(); ++i) sum_b += b[pick_b(rng)] / scale;
    d = (sum_a / a.size() - sum_b / b.size()) * scale;
  }
  std::sort(deltas.begin(), deltas.end());
  BootstrapCi ci;
  ci.low = Quantile(deltas, alpha / 2);
  ci.high = Quantile(deltas, 1 - alpha / 2);
  ci.resamples = resamples;
  ci.seed = seed;
  return ci;
}

std::vector<double> HolmAdjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> adjusted(m);
  double running_max = 0;
  for (size_t i = 0; i < m; ++i) {
    running_max = std::max(running_max, std::min(1.0, (m - i) * p[order[i]]));
    adjusted[order[i]] = running_max;
  }
  return adjusted;
}

}  // namespace tvlab
