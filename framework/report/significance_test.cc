// The significance statistics against textbook values and against scipy on
// the same numbers (Debian's python3-scipy through /usr/bin/python3; that
// part is skipped, saying so, when scipy is absent).

#include "framework/report/significance.h"

#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

using Group = std::vector<double>;

TEST(WelchTest, WikipediaExampleOne) {
  // en.wikipedia.org/wiki/Welch's_t-test, "Examples", example 1:
  // t = -2.46, df = 24.9 (truncated: 24.99), p = 0.021.
  Group a1 = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  Group a2 = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  WelchResult r = WelchTest(a1, a2);
  ASSERT_TRUE(r.defined);
  EXPECT_NEAR(r.t, -2.46, 0.005);
  EXPECT_GE(r.df, 24.9);
  EXPECT_LT(r.df, 25.0);
  EXPECT_NEAR(r.p, 0.021, 0.0005);
  EXPECT_LT(r.ci_high, 0);  // p < 0.05 <=> the 95% CI excludes 0
  EXPECT_NEAR((r.ci_low + r.ci_high) / 2, r.delta, 1e-12);
}

TEST(WelchTest, EqualSizesAndVariancesGiveTheStudentQuantile) {
  // Two groups of 6 with equal variance: df = 2 * (6 - 1) = 10, and the CI
  // half-width is t_{0.975, 10} * SE with t_{0.975, 10} = 2.228138851986274
  // (statistical tables; scipy.stats.t.ppf(0.975, 10)).
  Group a = {1, 2, 3, 4, 5, 6}, b = {11, 12, 13, 14, 15, 16};
  WelchResult r = WelchTest(a, b);
  ASSERT_TRUE(r.defined);
  EXPECT_DOUBLE_EQ(r.delta, -10);
  EXPECT_NEAR(r.df, 10, 1e-12);
  EXPECT_NEAR(r.standard_error, std::sqrt(3.5 / 6 * 2), 1e-12);
  EXPECT_NEAR((r.ci_high - r.ci_low) / 2 / r.standard_error, 2.228138851986274, 1e-12);
}

TEST(WelchTest, UndefinedWithoutVariance) {
  EXPECT_FALSE(WelchTest({0.5}, {0.4, 0.6}).defined);
  WelchResult same = WelchTest({1, 1, 1}, {1, 1, 1});
  EXPECT_FALSE(same.defined);
  EXPECT_EQ(same.delta, 0);
  EXPECT_NE(same.why_undefined, "");
  EXPECT_FALSE(WelchTest({}, {1, 2}).defined);
}

// A corrupt metrics.json (1e308) or a diverged but finite eval_loss: the
// squared deviations overflowed to inf, df became NaN and Boost threw.
TEST(WelchTest, HugeFiniteValuesGiveTheScaleFreeStatistics) {
  const Group a = {3, 1, 2.5}, b = {6, 5, 4};
  Group big_a, big_b;
  for (double x : a) big_a.push_back(x * 1e300);
  for (double x : b) big_b.push_back(x * 1e300);
  const WelchResult small = WelchTest(a, b), big = WelchTest(big_a, big_b);
  ASSERT_TRUE(small.defined);
  ASSERT_TRUE(big.defined) << big.why_undefined;
  EXPECT_NEAR(big.t, small.t, 1e-12 * std::abs(small.t));
  EXPECT_NEAR(big.df, small.df, 1e-12 * small.df);
  EXPECT_NEAR(big.p, small.p, 1e-12);
  EXPECT_NEAR(big.delta / 1e300, small.delta, 1e-12);
  EXPECT_NEAR(big.ci_low / 1e300, small.ci_low, 1e-12);
  EXPECT_NEAR(big.standard_error / 1e300, small.standard_error, 1e-12);
}

TEST(WelchTest, UndefinedWhenAValueOrTheIntervalIsNotFinite) {
  const double inf = std::numeric_limits<double>::infinity();
  WelchResult r = WelchTest({1, inf}, {1, 2});
  EXPECT_FALSE(r.defined);
  EXPECT_NE(r.why_undefined.find("not finite"), std::string::npos) << r.why_undefined;
  EXPECT_FALSE(WelchTest({1, std::nan("")}, {1, 2}).defined);
  // Both means are finite, their difference (3.3e308) is not.
  r = WelchTest({1.7e308, 1.6e308}, {-1.7e308, -1.6e308});
  EXPECT_FALSE(r.defined);
  EXPECT_NE(r.why_undefined.find("range"), std::string::npos) << r.why_undefined;
}

TEST(BootstrapDeltaCi, HugeFiniteValuesStayFinite) {
  std::optional<BootstrapCi> ci = BootstrapDeltaCi({1e308, 0.9e308, 0.8e308}, {1, 2, 3}, 200);
  ASSERT_TRUE(ci.has_value());
  EXPECT_TRUE(std::isfinite(ci->low) && std::isfinite(ci->high));
  EXPECT_GE(ci->low, 0.8e308 * (1 - 1e-12));
  EXPECT_LE(ci->high, 1e308 * (1 + 1e-12));
}

TEST(HolmAdjust, TextbookFourHypotheses) {
  // Sorted: 0.005 0.01 0.03 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(0.06, 1*0.04).
  std::vector<double> adjusted = HolmAdjust({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_NEAR(adjusted[0], 0.03, 1e-15);
  EXPECT_NEAR(adjusted[1], 0.06, 1e-15);
  EXPECT_NEAR(adjusted[2], 0.06, 1e-15);
  EXPECT_NEAR(adjusted[3], 0.02, 1e-15);
  EXPECT_DOUBLE_EQ(HolmAdjust({0.6, 0.7})[1], 1.0);  // capped at 1
  EXPECT_TRUE(HolmAdjust({}).empty());
}

TEST(BootstrapDeltaCi, ReproducibleAndAroundTheDelta) {
  Group a = {0.91, 0.93, 0.95, 0.92, 0.94}, b = {0.80, 0.82, 0.81, 0.83, 0.79};
  auto ci = BootstrapDeltaCi(a, b, 4000, 7);
  auto again = BootstrapDeltaCi(a, b, 4000, 7);
  ASSERT_TRUE(ci && again);
  EXPECT_EQ(ci->low, again->low);  // fixed seed: bit for bit
  EXPECT_EQ(ci->high, again->high);
  EXPECT_EQ(ci->resamples, 4000);
  // The delta is 0.12; resampled deltas lie within [min a - max b, max a - min b].
  EXPECT_LT(ci->low, 0.12);
  EXPECT_GT(ci->high, 0.12);
  EXPECT_GE(ci->low, 0.91 - 0.83);
  EXPECT_LE(ci->high, 0.95 - 0.79);
  // Constant groups: every resample gives the same delta.
  auto constant = BootstrapDeltaCi({2, 2, 2, 2, 2}, {1, 1, 1, 1, 1});
  ASSERT_TRUE(constant);
  EXPECT_DOUBLE_EQ(constant->low, 1);
  EXPECT_DOUBLE_EQ(constant->high, 1);
  EXPECT_FALSE(BootstrapDeltaCi({}, {1}));
}

// ---- against scipy ----

// Groups shaped like seed results: accuracies near 1, losses, a tiny n.
const std::vector<std::pair<Group, Group>> kPairs = {
    {{0.912, 0.934, 0.951}, {0.901, 0.905, 0.915, 0.921}},
    {{2.31, 2.45, 2.28, 2.39, 2.35}, {2.52, 2.61, 2.48, 2.57, 2.66}},
    {{0.5, 0.7}, {0.1, 0.9, 0.4}},
    {{1e-3, 2e-3, 4e-3, 3e-3, 5e-3, 1e-3}, {1.5e-3, 2.5e-3, 3.1e-3}},
    {{0.976, 0.981, 0.979}, {0.975, 0.982, 0.980}},
};

std::string PyList(const Group& g) {
  std::ostringstream out;
  out.precision(17);
  out << "[";
  for (size_t i = 0; i < g.size(); ++i) out << (i ? ", " : "") << g[i];
  return out.str() + "]";
}

bool HaveScipy() {
  static const bool have = std::system("/usr/bin/python3 -c 'import scipy.stats' >/dev/null 2>&1") == 0;
  return have;
}

// The p-values Holm is checked on: the pairs' own, plus ties, a large one
// and a tiny one.
std::vector<double> HolmInputs() {
  std::vector<double> p;
  for (const auto& [a, b] : kPairs) p.push_back(WelchTest(a, b).p);
  p.insert(p.end(), {0.04, 0.04, 0.9, 1e-6});
  return p;
}

// One Python process (starting it and importing scipy takes seconds) prints,
// per pair, Welch's t, p, df and the 95% CI; then Holm's adjusted p-values,
// by hand; then scipy's percentile bootstrap CI of pair 1.
const char kScipyProgram[] = R"py(
import sys
import numpy as np
from scipy import stats
for a, b in pairs:
    a, b = np.array(a), np.array(b)
    res = stats.ttest_ind(a, b, equal_var=False)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    d = a.mean() - b.mean()
    print(repr(float(res.statistic)), repr(float(res.pvalue)), repr(float(df)),
          repr(float(d - half)), repr(float(d + half)))
m = len(holm)
order = sorted(range(m), key=lambda i: holm[i])
adj = [0.0] * m
running = 0.0
for rank, i in enumerate(order):
    running = max(running, min(1.0, (m - rank) * holm[i]))
    adj[i] = running
print(' '.join(repr(x) for x in adj))
a, b = pairs[1]
res = stats.bootstrap((a, b), lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
                      n_resamples=20000, method='percentile', confidence_level=0.95,
                      random_state=np.random.default_rng(1))
print(repr(res.confidence_interval.low), repr(res.confidence_interval.high))
)py";

class SignificanceAgainstScipy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveScipy()) return;
    std::string program = "pairs = [\n";
    for (const auto& [a, b] : kPairs) program += "  (" + PyList(a) + ", " + PyList(b) + "),\n";
    program += "]\nholm = " + PyList(HolmInputs()) + "\n" + kScipyProgram;
    const std::string path = std::string(getenv("TEST_TMPDIR")) + "/check.py";
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(program.c_str(), f);
    std::fclose(f);
    FILE* p = popen(("/usr/bin/python3 " + path).c_str(), "r");
    double v;
    while (std::fscanf(p, "%lf", &v) == 1) scipy_->push_back(v);
    python_status_ = pclose(p);
  }
  void SetUp() override {
    if (!HaveScipy()) GTEST_SKIP() << "skipped: /usr/bin/python3 has no scipy (apt-get install python3-scipy)";
    ASSERT_EQ(python_status_, 0);
    ASSERT_EQ(scipy_->size(), 5 * kPairs.size() + HolmInputs().size() + 2);
  }
  static inline std::vector<double>* scipy_ = new std::vector<double>;
  static inline int python_status_ = -1;
};

void ExpectRelativelyNear(double actual, double expected, const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), 1e-9 * std::max(std::abs(expected), 1e-300))
      << what << ": tvlab " << actual << ", scipy " << expected;
}

TEST_F(SignificanceAgainstScipy, WelchTAndPAndCi) {
  const std::vector<double>& expected = *scipy_;
  for (size_t i = 0; i < kPairs.size(); ++i) {
    WelchResult r = WelchTest(kPairs[i].first, kPairs[i].second);
    ASSERT_TRUE(r.defined) << i;
    const std::string at = "pair " + std::to_string(i);
    ExpectRelativelyNear(r.t, expected[5 * i], at + " t");
    ExpectRelativelyNear(r.p, expected[5 * i + 1], at + " p");
    ExpectRelativelyNear(r.df, expected[5 * i + 2], at + " df");
    ExpectRelativelyNear(r.ci_low, expected[5 * i + 3], at + " ci_low");
    ExpectRelativelyNear(r.ci_high, expected[5 * i + 4], at + " ci_high");
  }
}

TEST_F(SignificanceAgainstScipy, HolmByHandInPython) {
  const std::vector<double> p = HolmInputs();
  const std::vector<double> adjusted = HolmAdjust(p);
  for (size_t i = 0; i < p.size(); ++i)
    ExpectRelativelyNear(adjusted[i], (*scipy_)[5 * kPairs.size() + i], "holm " + std::to_string(i));
}

TEST_F(SignificanceAgainstScipy, BootstrapAgreesWithScipyPercentileBootstrap) {
  // Different random streams: the endpoints agree up to Monte Carlo error,
  // here within 5% of the interval's width at B = 20000.
  const double low = (*scipy_)[scipy_->size() - 2], high = scipy_->back();
  auto ci = BootstrapDeltaCi(kPairs[1].first, kPairs[1].second, 20000);
  ASSERT_TRUE(ci);
  EXPECT_NEAR(ci->low, low, 0.05 * (high - low));
  EXPECT_NEAR(ci->high, high, 0.05 * (high - low));
}

}  // namespace
}  // namespace tvlab
