#include "framework/report/significance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "boost/math/distributions/students_t.hpp"

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

}  // namespace

WelchResult WelchTest(const std::vector<double>& a, const std::vector<double>& b, double alpha) {
  WelchResult r;
  r.n_a = static_cast<int>(a.size());
  r.n_b = static_cast<int>(b.size());
  if (a.empty() || b.empty()) {
    r.why_undefined = "a group has no finished seeds";
    return r;
  }
  const double mean_a = Mean(a), mean_b = Mean(b);
  r.delta = mean_a - mean_b;
  if (a.size() < 2 || b.size() < 2) {
    r.why_undefined = "fewer than 2 seeds: no variance to test against";
    return r;
  }
  const double va = Variance(a, mean_a) / a.size(), vb = Variance(b, mean_b) / b.size();
  r.standard_error = std::sqrt(va + vb);
  if (!(r.standard_error > 0)) {
    r.why_undefined = "every seed gave the same value in both groups: no variance to test against";
    return r;
  }
  r.df = (va + vb) * (va + vb) / (va * va / (a.size() - 1) + vb * vb / (b.size() - 1));
  r.t = r.delta / r.standard_error;
  boost::math::students_t dist(r.df);
  r.p = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::abs(r.t))));
  const double half = boost::math::quantile(boost::math::complement(dist, alpha / 2)) * r.standard_error;
  r.ci_low = r.delta - half;
  r.ci_high = r.delta + half;
  r.defined = true;
  return r;
}

std::optional<BootstrapCi> BootstrapDeltaCi(const std::vector<double>& a, const std::vector<double>& b,
                                            int resamples, uint64_t seed, double alpha) {
  if (a.empty() || b.empty() || resamples < 1) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  std::vector<double> deltas(resamples);
  for (double& d : deltas) {
    double sum_a = 0, sum_b = 0;
    for (size_t i = 0; i < a.size(); ++i) sum_a += a[pick_a(rng)];
    for (size_t i = 0; i < b.size(); ++i) sum_b += b[pick_b(rng)];
    d = sum_a / a.size() - sum_b / b.size();
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
