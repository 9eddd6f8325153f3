#include "framework/report/scaling_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"

namespace tvlab {
namespace {

using Vec3 = std::array<double, 3>;
using Mat3 = std::array<Vec3, 3>;

// Solves m x = r by Gaussian elimination with partial pivoting; false when
// m is singular.
bool Solve3(Mat3 m, Vec3 r, Vec3* x) {
  for (int col = 0; col < 3; ++col) {
    int pivot = col;
    for (int row = col + 1; row < 3; ++row)
      if (std::abs(m[row][col]) > std::abs(m[pivot][col])) pivot = row;
    if (!(std::abs(m[pivot][col]) > 0)) return false;
    std::swap(m[col], m[pivot]);
    std::swap(r[col], r[pivot]);
    for (int row = col + 1; row < 3; ++row) {
      const double f = m[row][col] / m[col][col];
      for (int k = col; k < 3; ++k) m[row][k] -= f * m[col][k];
      r[row] -= f * r[col];
    }
  }
  for (int row = 2; row >= 0; --row) {
    double s = r[row];
    for (int k = row + 1; k < 3; ++k) s -= m[row][k] * (*x)[k];
    (*x)[row] = s / m[row][row];
  }
  return true;
}

bool Invert3(const Mat3& m, Mat3* inverse) {
  for (int j = 0; j < 3; ++j) {
    Vec3 e = {0, 0, 0}, column;
    e[j] = 1;
    if (!Solve3(m, e, &column)) return false;
    for (int i = 0; i < 3; ++i) (*inverse)[i][j] = column[i];
  }
  return true;
}

// Model in scaled units x = N / scale: f = a x^-b + c.
double Model(const Vec3& p, double x) { return p[0] * std::pow(x, -p[1]) + p[2]; }

double Ssr(const Vec3& p, const std::vector<double>& x, const std::vector<double>& y) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (y[i] - Model(p, x[i])) * (y[i] - Model(p, x[i]));
  return s;
}

// J^T J and J^T r at p (J: d f / d(a, b, c); r = y - f).
void Normal(const Vec3& p, const std::vector<double>& x, const std::vector<double>& y, Mat3* jtj, Vec3* jtr) {
  *jtj = {};
  *jtr = {};
  for (size_t i = 0; i < x.size(); ++i) {
    const double power = std::pow(x[i], -p[1]);
    const Vec3 j = {power, -p[0] * power * std::log(x[i]), 1.0};
    const double r = y[i] - Model(p, x[i]);
    for (int u = 0; u < 3; ++u) {
      (*jtr)[u] += j[u] * r;
      for (int v = 0; v < 3; ++v) (*jtj)[u][v] += j[u] * j[v];
    }
  }
}

// Refuses what no fit can use: mismatched counts, too few points or sizes,
// a size that is not positive or a loss that is not finite.
absl::Status CheckPoints(const std::vector<double>& n, const std::vector<double>& loss) {
  if (n.size() != loss.size()) return absl::InvalidArgumentError("scaling fit: sizes and losses differ in count");
  const std::set<double> distinct(n.begin(), n.end());
  if (n.size() < 4 || distinct.size() < 3) {
    return absl::FailedPreconditionError(absl::StrCat(
        "too few points for a scaling fit: ", n.size(), " point(s) at ", distinct.size(),
        " size(s); loss = a·N^-b + c has three parameters, so it needs at least 3 sizes and 4 points "
        "(add sizes or seeds)"));
  }
  for (size_t i = 0; i < n.size(); ++i) {
    if (!(n[i] > 0) || !std::isfinite(n[i]) || !std::isfinite(loss[i])) {
      return absl::InvalidArgumentError(absl::StrCat("scaling fit: point ", i, " (N = ", n[i], ", loss = ", loss[i],
                                                     ") is not a positive size with a finite loss"));
    }
  }
  return absl::OkStatus();
}

// The geometric mean of the sizes: the fit runs in x = N / scale.
double GeometricMean(const std::vector<double>& n) {
  double log_sum = 0;
  for (double v : n) log_sum += std::log(v);
  return std::exp(log_sum / n.size());
}

// Start: c just below the smallest loss, then a and b from a line through
// log(loss - c) against log x.
Vec3 StartingPoint(const std::vector<double>& x, const std::vector<double>& loss) {
  const double lo = *std::min_element(loss.begin(), loss.end());
  const double hi = *std::max_element(loss.begin(), loss.end());
  const double c0 = lo - 0.1 * std::max(hi - lo, 1e-6 * std::max(1.0, std::abs(lo)));
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = std::log(x[i]), v = std::log(loss[i] - c0);
    sx += u, sy += v, sxx += u * u, sxy += u * v;
  }
  const double m = static_cast<double>(x.size());
  const double slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
  return Vec3{std::exp((sy - slope * sx) / m), -slope, c0};
}

// Where Levenberg-Marquardt ended.
struct Minimum {
  Vec3 p;
  double ssr = 0;
  int iterations = 0;
  bool converged = false;
};

// Levenberg-Marquardt from `p`: damped Gauss-Newton steps, the damping
// lowered after a step that does not raise the squared residuals and raised
// until one is found; converged when the reduction or the step is
// negligible, or no downhill step exists at any damping.
Minimum Minimize(Vec3 p, const std::vector<double>& x, const std::vector<double>& loss, int max_iterations) {
  double lambda = 1e-3;
  double ssr = Ssr(p, x, loss);
  bool converged = false;
  int iteration = 0;
  for (; iteration < max_iterations && !converged; ++iteration) {
    Mat3 jtj;
    Vec3 jtr;
    Normal(p, x, loss, &jtj, &jtr);
    bool improved = false;
    while (!improved && lambda < 1e12) {
      Mat3 damped = jtj;
      for (int k = 0; k < 3; ++k) damped[k][k] += lambda * jtj[k][k];
      Vec3 step;
      if (!Solve3(damped, jtr, &step)) {
        lambda *= 10;
        continue;
      }
      const Vec3 trial = {p[0] + step[0], p[1] + step[1], p[2] + step[2]};
      const double trial_ssr = Ssr(trial, x, loss);
      if (std::isfinite(trial_ssr) && trial_ssr <= ssr) {
        const double reduction = ssr - trial_ssr;
        const double step_size = std::abs(step[0]) / (std::abs(p[0]) + 1e-300) + std::abs(step[1]) / (std::abs(p[1]) + 1e-300) +
                                 std::abs(step[2]) / (std::abs(p[2]) + 1e-300);
        p = trial;
        ssr = trial_ssr;
        lambda = std::max(lambda / 10, 1e-15);
        improved = true;
        if (reduction <= 1e-15 * (ssr + 1e-300) || step_size < 1e-13 || ssr == 0) converged = true;
      } else {
        lambda *= 10;
      }
    }
    if (!improved) converged = true;  // no downhill step at any damping: a minimum
  }
  return Minimum{p, ssr, iteration, converged};
}

// The standard errors of a, b and c from the covariance s^2 (J^T J)^-1 at
// the minimum `p` (scaled units); left 0 when J^T J is singular.
void SetStandardErrors(const Vec3& p, double scale, const std::vector<double>& x, const std::vector<double>& loss,
                       PowerLawFit* fit) {
  Mat3 jtj, covariance;
  Vec3 unused;
  Normal(p, x, loss, &jtj, &unused);
  if (x.size() > 3 && Invert3(jtj, &covariance)) {
    const double s2 = fit->ssr / (x.size() - 3);
    fit->b_se = std::sqrt(std::max(0.0, s2 * covariance[1][1]));
    fit->c_se = std::sqrt(std::max(0.0, s2 * covariance[2][2]));
    // a = a_s scale^b: var(a) by the delta method over (a_s, b).
    const double da_das = std::pow(scale, p[1]), da_db = fit->a * std::log(scale);
    const double var_a = s2 * (da_das * da_das * covariance[0][0] + 2 * da_das * da_db * covariance[0][1] +
                               da_db * da_db * covariance[1][1]);
    fit->a_se = std::sqrt(std::max(0.0, var_a));
  }
}

}  // namespace

double PowerLawFit::Predict(double n) const { return a * std::pow(n, -b) + c; }

absl::StatusOr<PowerLawFit> FitPowerLaw(const std::vector<double>& n, const std::vector<double>& loss,
                                        int max_iterations) {
  if (absl::Status usable = CheckPoints(n, loss); !usable.ok()) return usable;
  const double scale = GeometricMean(n);
  std::vector<double> x(n.size());
  for (size_t i = 0; i < n.size(); ++i) x[i] = n[i] / scale;
  const Minimum min = Minimize(StartingPoint(x, loss), x, loss, max_iterations);
  const Vec3& p = min.p;
  if (!min.converged || !std::isfinite(min.ssr) || !(p[1] > 0) || !std::isfinite(p[0])) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the scaling fit did not converge (", min.iterations, " iterations; b = ", p[1],
        "): the losses may not follow a·N^-b + c with b > 0 over these sizes; add sizes or check for failed runs"));
  }
  PowerLawFit fit;
  fit.points = static_cast<int>(n.size());
  fit.iterations = min.iterations;
  fit.ssr = min.ssr;
  // Back to the caller's units: a x^-b = a scale^b N^-b.
  fit.a = p[0] * std::pow(scale, p[1]);
  fit.b = p[1];
  fit.c = p[2];
  SetStandardErrors(p, scale, x, loss, &fit);
  return fit;
}

std::vector<double> CrossingSizes(const PowerLawFit& first, const PowerLawFit& second, double lo, double hi) {
  std::vector<double> out;
  if (!(lo > 0) || !(hi > lo)) return out;
  auto diff = [&](double log_n) { return first.Predict(std::exp(log_n)) - second.Predict(std::exp(log_n)); };
  const int steps = 400;
  const double l0 = std::log(lo), l1 = std::log(hi);
  double prev_x = l0, prev = diff(l0);
  for (int i = 1; i <= steps; ++i) {
    const double cur_x = l0 + (l1 - l0) * i / steps, cur = diff(cur_x);
    if (prev == 0) out.push_back(std::exp(prev_x));
    if ((prev < 0 && cur > 0) || (prev > 0 && cur < 0)) {
      double a = prev_x, b = cur_x, fa = prev;
      for (int k = 0; k < 100; ++k) {
        const double mid = (a + b) / 2, fm = diff(mid);
        if ((fa < 0) == (fm < 0)) a = mid, fa = fm; else b = mid;
      }
      out.push_back(std::exp((a + b) / 2));
    }
    prev_x = cur_x, prev = cur;
  }
  return out;
}

}  // namespace tvlab
