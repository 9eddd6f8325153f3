// Seed statistics as numpy computes them (std with ddof=1).

#include "framework/report/stats.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Summarize, MeanAndSampleStd) {
  // numpy: np.mean([1, 2, 3, 4]) = 2.5, np.std([1, 2, 3, 4], ddof=1) = sqrt(5/3).
  SeedStats s = Summarize({1, 2, 3, 4});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(5.0 / 3.0));
  SeedStats three = Summarize({0.97, 0.98, 0.99});
  EXPECT_NEAR(three.mean, 0.98, 1e-12);
  EXPECT_NEAR(three.std, 0.01, 1e-12);
}

// Summing 1e308 twice overflowed to inf; the scaled sums do not.
TEST(Summarize, HugeFiniteValues) {
  SeedStats s = Summarize({1e308, 1e308, 0.5e308});
  EXPECT_NEAR(s.mean / 1e308, 2.5 / 3, 1e-12);
  EXPECT_NEAR(s.std / 1e308, std::sqrt((2 * std::pow(0.5 / 3, 2) + std::pow(1.0 / 3, 2)) / 2), 1e-12);
  // Below 1e150 the plain arithmetic runs: the same bits as before.
  SeedStats plain = Summarize({1e149, 3e149});
  EXPECT_EQ(plain.mean, (1e149 + 3e149) / 2);
}

TEST(Summarize, OneOrNoValues) {
  SeedStats one = Summarize({0.3});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.mean, 0.3);
  EXPECT_EQ(one.std, 0);
  EXPECT_EQ(Summarize({}).n, 0);
}

TEST(Format, MeanStdAndDelta) {
  EXPECT_EQ(FormatMeanStd(Summarize({0.97, 0.98, 0.99}), 3), "0.980 ± 0.010");
  EXPECT_EQ(FormatMeanStd(Summarize({0.3}), 3), "0.300");
  EXPECT_EQ(FormatMeanStd(Summarize({}), 3), "");
  EXPECT_EQ(FormatDelta(0.0123, 3), "+0.012");
  EXPECT_EQ(FormatDelta(-0.6714, 3), "-0.671");
  EXPECT_EQ(FormatDelta(-0.0001, 3), "0.000");
  EXPECT_EQ(FormatDelta(0.0, 3), "0.000");
}

}  // namespace
}  // namespace tvlab
