// The size ladder's arithmetic against independently computed values: the
// target crossing on curves whose inverse is known in closed form, the t
// interval against scipy (testdata/ladder_reference.py), and the fits and
// crossings of power laws whose crossing is known analytically.

#include "experiments/grid/report/ladder_analysis.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

#include "experiments/grid/report/testdata/ladder_reference.inc"

using Kind = TargetCrossing::Kind;

// A curve that falls linearly in FLOPs between evaluations: loss(x) = 4 -
// x / 1e9, evaluated at 1e9, 2e9, ... The crossing of a target t between
// two evaluations is the line's inverse, (4 - t) * 1e9.
TEST(TargetCrossing, InterpolatesOnALinearCurveToItsInverse) {
  std::vector<double> flops, loss;
  for (int k = 1; k <= 4; ++k) flops.push_back(k * 1e9), loss.push_back(4 - k);
  for (double target : {2.7, 2.01, 1.5, 0.3}) {
    const TargetCrossing c = FindTargetCrossing(flops, loss, target);
    ASSERT_EQ(c.kind, Kind::kReached) << target;
    EXPECT_NEAR(c.flops, (4 - target) * 1e9, 1e-6 * 1e9) << target;
  }
}

// A curve that is not linear: the crossing lies on the chord between the two
// evaluations that bracket the target, not on the curve itself.
TEST(TargetCrossing, UsesTheChordBetweenTheBracketingEvaluations) {
  const std::vector<double> flops = {1e10, 4e10, 9e10};
  std::vector<double> loss;
  for (double x : flops) loss.push_back(1 + 1e5 / std::sqrt(x));  // 2.0, 1.5, 1.333...
  const double target = 1.4;
  const TargetCrossing c = FindTargetCrossing(flops, loss, target);
  ASSERT_EQ(c.kind, Kind::kReached);
  // On the chord: the fraction of the loss drop times the FLOPs step.
  const double fraction = (loss[1] - target) / (loss[1] - loss[2]);
  EXPECT_DOUBLE_EQ(c.flops, flops[1] + fraction * (flops[2] - flops[1]));
  EXPECT_GT(c.flops, flops[1]);
  EXPECT_LT(c.flops, flops[2]);
}

TEST(TargetCrossing, ExactHitIsThatEvaluation) {
  const TargetCrossing c = FindTargetCrossing({1, 2, 3}, {3, 2, 1}, 2.0);
  ASSERT_EQ(c.kind, Kind::kReached);
  EXPECT_DOUBLE_EQ(c.flops, 2);
}

TEST(TargetCrossing, ReachedByTheFirstEvaluationIsAnUpperBound) {
  const TargetCrossing c = FindTargetCrossing({5e9, 1e10}, {1.0, 0.9}, 1.5);
  EXPECT_EQ(c.kind, Kind::kAtOrBefore);
  EXPECT_DOUBLE_EQ(c.flops, 5e9);
  EXPECT_STREQ(TargetKindName(c.kind), "reached_at_or_before");
}

TEST(TargetCrossing, NotReachedKeepsTheBestLossAndNoFlops) {
  const TargetCrossing c = FindTargetCrossing({1, 2, 3}, {3, 2.5, 2.6}, 2.0);
  EXPECT_EQ(c.kind, Kind::kNotReached);
  EXPECT_FALSE(c.reached());
  EXPECT_DOUBLE_EQ(c.best_loss, 2.5);
  EXPECT_STREQ(TargetKindName(c.kind), "not_reached");
}

TEST(TargetCrossing, NonFiniteLossesNeverReachAndAreNotInterpolatedFrom) {
  const double nan = std::nan("");
  EXPECT_EQ(FindTargetCrossing({1, 2}, {nan, nan}, 2.0).kind, Kind::kNotReached);
  const TargetCrossing c = FindTargetCrossing({1, 2, 3}, {3, nan, 1}, 2.0);
  EXPECT_EQ(c.kind, Kind::kAtOrBefore);  // no finite point just before it
  EXPECT_DOUBLE_EQ(c.flops, 3);
  EXPECT_EQ(FindTargetCrossing({}, {}, 2.0).kind, Kind::kNoCurve);
}

TEST(MeanCi, MatchesScipyTInterval) {
  for (const MeanCiCase& c : kMeanCiCases) {
    const MeanInterval m = MeanCi(c.values, c.confidence);
    ASSERT_TRUE(m.defined) << m.why_undefined;
    const double scale = std::abs(c.mean) + (c.high - c.low);
    EXPECT_NEAR(m.mean, c.mean, 1e-12 * scale);
    EXPECT_NEAR(m.low, c.low, 1e-9 * scale);
    EXPECT_NEAR(m.high, c.high, 1e-9 * scale);
    EXPECT_EQ(m.n, static_cast<int>(c.values.size()));
  }
}

TEST(MeanCi, UndefinedWithOneSeedOrNoSpreadSaysWhy) {
  const MeanInterval one = MeanCi({2.5}, 0.95);
  EXPECT_FALSE(one.defined);
  EXPECT_DOUBLE_EQ(one.mean, 2.5);
  EXPECT_NE(one.why_undefined.find("fewer than 2"), std::string::npos);
  const MeanInterval same = MeanCi({2.5, 2.5}, 0.95);
  EXPECT_FALSE(same.defined);
  EXPECT_NE(same.why_undefined.find("same value"), std::string::npos);
  EXPECT_EQ(MeanCi({}, 0.95).n, 0);
}

// Two power laws with one exponent, A = a1 C^-b + c1 and B = a2 C^-b + c2,
// are equal where (a1 - a2) C^-b = c2 - c1: C* = ((a1 - a2) / (c2 - c1))^(1/b).
struct Law {
  double a, b, c;
  double operator()(double x) const { return a * std::pow(x, -b) + c; }
};

std::vector<double> Sizes(double lo, double hi, int count) {
  std::vector<double> out;
  for (int k = 0; k < count; ++k) out.push_back(lo * std::pow(hi / lo, k / (count - 1.0)));
  return out;
}

PowerLawFit Fit(const Law& law, const std::vector<double>& sizes) {
  std::vector<double> loss;
  for (double x : sizes) loss.push_back(law(x));
  auto fit = FitPowerLaw(sizes, loss);
  EXPECT_TRUE(fit.ok()) << fit.status();
  return fit.value_or(PowerLawFit{});
}

TEST(CrossFittedCurves, FindsTheAnalyticCrossingInsideTheMeasuredRange) {
  const Law a{8e6, 0.5, 1.0}, b{4e6, 0.5, 1.2};  // at FLOPs scale: C* = (4e6 / 0.2)^2 = 4e14
  const double expected = std::pow((a.a - b.a) / (b.c - a.c), 1 / a.b);
  const std::vector<double> sizes = Sizes(1e13, 1e16, 6);
  const PowerLawFit fa = Fit(a, sizes), fb = Fit(b, sizes);
  EXPECT_NEAR(fa.b, 0.5, 1e-6);
  EXPECT_NEAR(fb.c, 1.2, 1e-6);
  const CurveCrossings c = CrossFittedCurves(fa, fb, 1e13, 1e16, 1e13, 1e16);
  ASSERT_EQ(c.in_range.size(), 1u);
  EXPECT_TRUE(c.extrapolated.empty());
  EXPECT_NEAR(c.in_range[0] / expected, 1, 1e-4);
  // Below the crossing A (the larger a) is worse, above it better.
  EXPECT_GT(fa.Predict(expected / 2), fb.Predict(expected / 2));
  EXPECT_LT(fa.Predict(expected * 2), fb.Predict(expected * 2));
}

TEST(CrossFittedCurves, LabelsACrossingOutsideTheMeasuredRangeExtrapolated) {
  const Law a{8, 0.5, 1.0}, b{4, 0.5, 1.2};  // C* = 400
  const std::vector<double> sizes = Sizes(10, 100, 5);
  const CurveCrossings c = CrossFittedCurves(Fit(a, sizes), Fit(b, sizes), 10, 100, 10, 100);
  EXPECT_TRUE(c.in_range.empty());
  ASSERT_EQ(c.extrapolated.size(), 1u);
  EXPECT_NEAR(c.extrapolated[0] / 400, 1, 1e-4);
  EXPECT_DOUBLE_EQ(c.search_lo, 0.1);
  EXPECT_DOUBLE_EQ(c.search_hi, 1e4);
}

TEST(CrossFittedCurves, NoneWhenOneCurveStaysBelow) {
  const Law a{8, 0.5, 1.0}, b{8, 0.5, 1.3};  // a constant offset: never equal
  const std::vector<double> sizes = Sizes(10, 1000, 5);
  const CurveCrossings c = CrossFittedCurves(Fit(a, sizes), Fit(b, sizes), 10, 1000, 20, 2000);
  EXPECT_TRUE(c.in_range.empty());
  EXPECT_TRUE(c.extrapolated.empty());
  EXPECT_DOUBLE_EQ(c.overlap_lo, 20);
  EXPECT_DOUBLE_EQ(c.overlap_hi, 1000);
}

}  // namespace
}  // namespace tvlab
