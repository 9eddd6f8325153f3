// Power, minimum detectable effects, seeds needed, the paired t-test and
// one-sided p-values against scipy's numbers (testdata/stats_reference.py
// wrote testdata/stats_reference.inc; power there is also checked against a
// direct numerical integration that does not use Boost); the equivalence
// test (TOST) and its power likewise (testdata/tost_reference.py, whose
// power is also checked against a simulation of the test itself).

#include "framework/report/power.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "framework/report/significance.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

#include "framework/report/testdata/stats_reference.inc"
#include "framework/report/testdata/tost_reference.inc"

PowerDesign Design(bool paired, bool one_sided, double alpha) {
  PowerDesign d;
  d.paired = paired;
  d.one_sided = one_sided;
  d.alpha = alpha;
  return d;
}

TEST(PowerTest, MatchesScipyNoncentralT) {
  for (const PowerCase& c : kPowerCases) {
    EXPECT_NEAR(TTestPower(c.d, c.n, Design(c.paired, c.one_sided, c.alpha)), c.power, 1e-9)
        << "d=" << c.d << " n=" << c.n << " paired=" << c.paired << " one_sided=" << c.one_sided;
  }
}

TEST(PowerTest, MinimumDetectableEffectMatchesScipyRootFinding) {
  for (const MdeCase& c : kMdeCases) {
    const PowerDesign design = Design(c.paired, c.one_sided, c.alpha);
    EXPECT_NEAR(MinimumDetectableEffect(c.n, design), c.d, 1e-7 * c.d) << "n=" << c.n;
    // And it is where the power crosses 0.8.
    EXPECT_NEAR(TTestPower(MinimumDetectableEffect(c.n, design), c.n, design), 0.8, 1e-8);
  }
}

TEST(PowerTest, SeedsNeededIsTheFirstNReachingThePower) {
  for (const SeedsCase& c : kSeedsCases) {
    const PowerDesign design = Design(c.paired, c.one_sided, c.alpha);
    ASSERT_EQ(SeedsNeeded(c.d, design), c.n) << "d=" << c.d;
    if (c.n > 2) {
      EXPECT_LT(TTestPower(c.d, c.n - 1, design), 0.8);
    }
  }
  EXPECT_EQ(SeedsNeeded(0.5, Design(false, false, 0.05), 0.8, /*max_n=*/63), std::nullopt);  // needs 64
  EXPECT_EQ(SeedsNeeded(0.5, Design(false, false, 0.05), 0.8, /*max_n=*/64), 64);
  EXPECT_EQ(SeedsNeeded(0.0, Design(false, false, 0.05)), std::nullopt);
}

Sides SidesOf(const char* alternative) {
  if (std::strcmp(alternative, "less") == 0) return Sides::kLess;
  if (std::strcmp(alternative, "greater") == 0) return Sides::kGreater;
  return Sides::kTwoSided;
}

TEST(PairedTest, MatchesScipyTtestRel) {
  for (const TTestCase& c : kTTestCases) {
    const PairedResult r = PairedTest(c.a, c.b);
    ASSERT_TRUE(r.defined) << r.why_undefined;
    EXPECT_NEAR(r.t, c.paired_t, 1e-9 * std::abs(c.paired_t));
    EXPECT_NEAR(TTestP(r.t, r.df, SidesOf(c.alternative)), c.paired_p, 1e-10) << c.alternative;
    EXPECT_NEAR(r.ci_low, c.paired_ci_low, 1e-9);  // t quantiles agree to ~1e-9 relative
    EXPECT_NEAR(r.ci_high, c.paired_ci_high, 1e-9);
    if (std::strcmp(c.alternative, "two-sided") == 0) {
      EXPECT_NEAR(r.p, c.paired_p, 1e-10);
    }
    EXPECT_DOUBLE_EQ(r.d_z, r.delta / r.sd_diff);
  }
}

TEST(WelchTest, OneSidedPMatchesScipyTtestInd) {
  for (const TTestCase& c : kTTestCases) {
    const WelchResult w = WelchTest(c.a, c.b);
    ASSERT_TRUE(w.defined);
    EXPECT_NEAR(w.t, c.welch_t, 1e-9 * std::abs(c.welch_t));
    EXPECT_NEAR(TTestP(w.t, w.df, SidesOf(c.alternative)), c.welch_p, 1e-10) << c.alternative;
  }
}

PowerDesign Equivalence(bool paired, double alpha) {
  PowerDesign d = Design(paired, /*one_sided=*/false, alpha);
  d.equivalence = true;
  return d;
}

TEST(TostTest, PValuesMatchScipyOnShiftedData) {
  for (const TostCase& c : kTostCases) {
    const WelchResult w = WelchTest(c.a, c.b);
    const TostResult welch = Tost(w.delta, w.standard_error, w.df, c.margin);
    EXPECT_NEAR(welch.p_lower, c.welch_p_lower, 1e-10);
    EXPECT_NEAR(welch.p_upper, c.welch_p_upper, 1e-10);
    EXPECT_EQ(welch.p, std::max(welch.p_lower, welch.p_upper));
    const PairedResult r = PairedTest(c.a, c.b);
    const TostResult paired = Tost(r.delta, r.standard_error, r.df, c.margin);
    EXPECT_NEAR(paired.p_lower, c.paired_p_lower, 1e-10);
    EXPECT_NEAR(paired.p_upper, c.paired_p_upper, 1e-10);
    EXPECT_EQ(paired.p, std::max(paired.p_lower, paired.p_upper));
    EXPECT_EQ(paired.t, paired.p == paired.p_lower ? paired.t_lower : paired.t_upper);
  }
}

TEST(TostTest, EquivalentExactlyWhenTheWiderIntervalIsInsideTheMargin) {
  // TOST at alpha rejects iff the (1 - 2 alpha) CI lies inside (-m, m).
  for (const TostCase& c : kTostCases) {
    const WelchResult ci90 = WelchTest(c.a, c.b, /*alpha=*/0.10);
    for (double margin : {c.margin, 0.5 * c.margin, 2 * c.margin, 4 * c.margin}) {
      const TostResult t = Tost(ci90.delta, ci90.standard_error, ci90.df, margin);
      EXPECT_EQ(t.p < 0.05, ci90.ci_low > -margin && ci90.ci_high < margin) << "margin " << margin;
    }
  }
}

TEST(TostPowerTest, MatchesScipyIntegrationAndSimulation) {
  for (const TostPowerCase& c : kTostPowerCases) {
    const PowerDesign design = Equivalence(c.paired, c.alpha);
    EXPECT_NEAR(TTestPower(c.d, c.n, design), c.power, 1e-9) << "d=" << c.d << " n=" << c.n;
    // At least the union bound from the two one-sided tests' powers.
    const double one_side = TTestPower(c.d, c.n, Design(c.paired, /*one_sided=*/true, c.alpha));
    EXPECT_GE(TTestPower(c.d, c.n, design), 2 * one_side - 1 - 1e-12);
  }
  EXPECT_EQ(TTestPower(0.0, 5, Equivalence(false, 0.05)), 0.0);  // a zero margin is never shown
}

TEST(TostPowerTest, SmallestMarginAndSeedsMatchScipy) {
  for (const TostSeedsCase& c : kTostSeedsCases) {
    const PowerDesign design = Equivalence(c.paired, c.alpha);
    EXPECT_NEAR(MinimumDetectableEffect(3, design), c.margin_at_3, 1e-7 * c.margin_at_3);
    ASSERT_EQ(SeedsNeeded(c.d, design), c.n) << "d=" << c.d;
    EXPECT_LT(TTestPower(c.d, c.n - 1, design), 0.8);
  }
}

TEST(PairedTest, UndefinedWithoutVariance) {
  EXPECT_FALSE(PairedTest({1.0}, {0.5}).defined);
  const PairedResult same = PairedTest({1.0, 2.0, 3.0}, {0.5, 1.5, 2.5});  // every difference 0.5
  EXPECT_FALSE(same.defined);
  EXPECT_DOUBLE_EQ(same.delta, 0.5);
}

TEST(CohensDTest, PooledStandardDeviation) {
  // Pooled variance ((2 * 1) + (2 * 4)) / 4 = 2.5.
  EXPECT_NEAR(PooledStd({1, 2, 3}, {2, 4, 6}), std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(CohensD({1, 2, 3}, {2, 4, 6}), (2.0 - 4.0) / std::sqrt(2.5), 1e-12);
  EXPECT_TRUE(std::isnan(CohensD({1}, {2, 3})));
}

}  // namespace
}  // namespace tvlab
