#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_LADDER_ANALYSIS_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_LADDER_ANALYSIS_H_

// The arithmetic of a size ladder's report (ladder_report.h), free of run
// directories so that it can be tested against independently computed
// values: where an evaluation curve first reaches a target loss, a t
// interval of a mean over seeds, and where two fitted power laws cross.

#include <string>
#include <vector>

#include "framework/report/scaling_fit.h"

namespace tvlab {

// Where a run's evaluation curve first reaches the target.
struct TargetCrossing {
  enum class Kind {
    kReached,             // between two evaluations: `flops` interpolated
    // At the first evaluation (or the first after a non-finite one): no
    // point before it to interpolate from, so `flops` is that
    // evaluation's, an upper bound.
    kAtOrBefore,
    kNotReached,          // no evaluation reached it
    kNoCurve,             // no evaluation at all
  };
  Kind kind = Kind::kNoCurve;
  double flops = 0;
  double best_loss = 0;  // the lowest evaluated loss (kNotReached: how far it stayed)
  bool reached() const { return kind == Kind::kReached || kind == Kind::kAtOrBefore; }
};
// "reached", "reached_at_or_before", "not_reached", "no_eval_curve".
const char* TargetKindName(TargetCrossing::Kind kind);

// The first i with loss[i] <= target (non-finite losses never reach it);
// for i > 0 the FLOPs where the straight line from (flops[i-1], loss[i-1])
// to (flops[i], loss[i]) meets the target:
//   flops[i-1] + (loss[i-1] - target) / (loss[i-1] - loss[i]) * (flops[i] - flops[i-1]).
// REQUIRES: flops ascending, flops.size() == loss.size().
TargetCrossing FindTargetCrossing(const std::vector<double>& flops, const std::vector<double>& loss, double target);

// A mean over seeds with its two-sided t interval, mean ± t_{n-1}((1+c)/2)
// · sd / sqrt(n) (scipy.stats.t.interval(c, n-1, mean, sem)): the grid's
// paired-test machinery (significance.h) on the values against zero.
struct MeanInterval {
  int n = 0;
  double mean = 0;
  bool defined = false;  // n >= 2 and a spread > 0
  double low = 0, high = 0;
  std::string why_undefined;
};
// REQUIRES: 0 < confidence < 1.
MeanInterval MeanCi(const std::vector<double>& values, double confidence);

// Where two fitted curves cross: inside the range both variants measured
// ([max of the lows, min of the highs]), or outside it up to a factor
// `extrapolate` beyond the union of their ranges (labelled extrapolated).
struct CurveCrossings {
  std::vector<double> in_range, extrapolated;  // ascending
  double overlap_lo = 0, overlap_hi = 0;       // the measured range both share (lo > hi: none)
  double search_lo = 0, search_hi = 0;         // the whole range searched
};
CurveCrossings CrossFittedCurves(const PowerLawFit& a, const PowerLawFit& b, double a_lo, double a_hi, double b_lo,
                                 double b_hi, double extrapolate = 100);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_LADDER_ANALYSIS_H_
