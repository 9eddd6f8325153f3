#include "experiments/grid/report/ladder_analysis.h"

#include <algorithm>
#include <cmath>

#include "framework/report/significance.h"

namespace tvlab {

const char* TargetKindName(TargetCrossing::Kind kind) {
  switch (kind) {
    case TargetCrossing::Kind::kReached:
      return "reached";
    case TargetCrossing::Kind::kAtOrBefore:
      return "reached_at_or_before";
    case TargetCrossing::Kind::kNotReached:
      return "not_reached";
    case TargetCrossing::Kind::kNoCurve:
      break;
  }
  return "no_eval_curve";
}

TargetCrossing FindTargetCrossing(const std::vector<double>& flops, const std::vector<double>& loss, double target) {
  TargetCrossing out;
  const size_t n = std::min(flops.size(), loss.size());
  if (n == 0) return out;
  out.kind = TargetCrossing::Kind::kNotReached;
  out.best_loss = INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (std::isfinite(loss[i])) out.best_loss = std::min(out.best_loss, loss[i]);
    if (!(loss[i] <= target)) continue;  // NaN never reaches it
    if (i == 0 || !std::isfinite(loss[i - 1])) {
      // Nothing evaluated before it to interpolate from: reached by here.
      out.kind = TargetCrossing::Kind::kAtOrBefore;
      out.flops = flops[i];
      return out;
    }
    out.kind = TargetCrossing::Kind::kReached;
    // loss[i-1] > target >= loss[i], so the denominator is > 0.
    out.flops = flops[i - 1] + (loss[i - 1] - target) / (loss[i - 1] - loss[i]) * (flops[i] - flops[i - 1]);
    return out;
  }
  return out;
}

MeanInterval MeanCi(const std::vector<double>& values, double confidence) {
  MeanInterval out;
  const PairedResult r = PairedTest(values, std::vector<double>(values.size(), 0.0), 1 - confidence);
  out.n = r.n;
  out.mean = r.delta;
  out.defined = r.defined;
  out.low = r.ci_low;
  out.high = r.ci_high;
  out.why_undefined = r.why_undefined;
  if (!out.defined && out.n >= 2 && r.sd_diff == 0) out.why_undefined = "every seed gave the same value";
  if (out.n < 2) out.why_undefined = "fewer than 2 seeds: no interval";
  return out;
}

CurveCrossings CrossFittedCurves(const PowerLawFit& a, const PowerLawFit& b, double a_lo, double a_hi, double b_lo,
                                 double b_hi, double extrapolate) {
  CurveCrossings out;
  out.overlap_lo = std::max(a_lo, b_lo);
  out.overlap_hi = std::min(a_hi, b_hi);
  out.search_lo = std::min(a_lo, b_lo) / extrapolate;
  out.search_hi = std::max(a_hi, b_hi) * extrapolate;
  for (double x : CrossingSizes(a, b, out.search_lo, out.search_hi)) {
    const bool inside = x >= out.overlap_lo && x <= out.overlap_hi;
    (inside ? out.in_range : out.extrapolated).push_back(x);
  }
  return out;
}

}  // namespace tvlab
