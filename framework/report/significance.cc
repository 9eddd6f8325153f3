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

double TTestP(double t, double df, Sides sides) {
  boost::math::students_t dist(df);
  switch (sides) {
    case Sides::kLess:
      return boost::math::cdf(dist, t);
    case Sides::kGreater:
      return boost::math::cdf(boost::math::complement(dist, t));
    case Sides::kTwoSided:
      break;
  }
  return std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::abs(t))));
}

TostResult Tost(double delta, double standard_error, double df, double margin) {
  TostResult r;
  r.t_lower = (delta + margin) / standard_error;
  r.p_lower = TTestP(r.t_lower, df, Sides::kGreater);
  r.t_upper = (delta - margin) / standard_error;
  r.p_upper = TTestP(r.t_upper, df, Sides::kLess);
  const bool lower_binds = r.p_lower >= r.p_upper;
  r.p = lower_binds ? r.p_lower : r.p_upper;
  r.t = lower_binds ? r.t_lower : r.t_upper;
  return r;
}

PairedResult PairedTest(const std::vector<double>& a, const std::vector<double>& b, double alpha) {
  PairedResult r;
  r.n = static_cast<int>(std::min(a.size(), b.size()));
  std::vector<double> d(r.n);
  for (int i = 0; i < r.n; ++i) d[i] = a[i] - b[i];
  if (!AllFinite(d)) {
    r.why_undefined = "a difference is not finite (NaN or infinite): no mean to test";
    return r;
  }
  const SeedStats s = Summarize(d);
  r.delta = s.mean;
  if (r.n < 2) {
    r.why_undefined = "fewer than 2 paired seeds: no variance to test against";
    return r;
  }
  r.sd_diff = s.std;
  if (!(s.std > 0)) {
    r.why_undefined = "every seed gave the same difference: no variance to test against";
    return r;
  }
  r.standard_error = s.std / std::sqrt(static_cast<double>(r.n));
  r.df = r.n - 1;
  r.t = s.mean / r.standard_error;
  r.p = TTestP(r.t, r.df, Sides::kTwoSided);
  boost::math::students_t dist(r.df);
  const double half = boost::math::quantile(boost::math::complement(dist, alpha / 2)) * r.standard_error;
  r.ci_low = s.mean - half;
  r.ci_high = s.mean + half;
  r.d_z = s.mean / s.std;
  r.defined = std::isfinite(r.t) && std::isfinite(r.ci_low) && std::isfinite(r.ci_high);
  if (!r.defined) r.why_undefined = "the differences under- or overflow a double: no t statistic";
  return r;
}

double PooledStd(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return std::nan("");
  const SeedStats sa = Summarize(a), sb = Summarize(b);
  const double pooled = ((sa.n - 1) * sa.std * sa.std + (sb.n - 1) * sb.std * sb.std) / (sa.n + sb.n - 2);
  return std::sqrt(pooled);
}

double CohensD(const std::vector<double>& a, const std::vector<double>& b) {
  const double sd = PooledStd(a, b);
  if (!(sd > 0)) return std::nan("");
  return (Summarize(a).mean - Summarize(b).mean) / sd;
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
