// The power-law fit against exact data, against scipy.optimize.curve_fit on
// the same noisy points (Debian's python3-scipy via /usr/bin/python3;
// skipped, saying so, without it), its error messages, and crossings.

#include "framework/report/scaling_fit.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

const std::vector<double> kSizes = {1e3, 3e3, 1e4, 3e4, 1e5, 3e5};

std::vector<double> Curve(double a, double b, double c, const std::vector<double>& noise) {
  std::vector<double> out;
  for (size_t i = 0; i < kSizes.size(); ++i) out.push_back(a * std::pow(kSizes[i], -b) + c + noise[i]);
  return out;
}

TEST(FitPowerLaw, RecoversExactParameters) {
  auto fit = FitPowerLaw(kSizes, Curve(50, 0.3, 1.5, {0, 0, 0, 0, 0, 0}));
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->a, 50, 50 * 1e-7);
  EXPECT_NEAR(fit->b, 0.3, 1e-9);
  EXPECT_NEAR(fit->c, 1.5, 1e-9);
  EXPECT_NEAR(fit->Predict(1e4), 50 * std::pow(1e4, -0.3) + 1.5, 1e-9);
  EXPECT_LT(fit->b_se, 1e-6);
}

TEST(FitPowerLaw, TooFewPointsOrNoConvergenceSaySo) {
  auto three = FitPowerLaw({1e3, 1e4, 1e5}, {3, 2, 1.5});
  ASSERT_FALSE(three.ok());
  EXPECT_THAT(three.status().message(), HasSubstr("too few points for a scaling fit: 3 point(s) at 3 size(s)"));
  auto two_sizes = FitPowerLaw({1e3, 1e3, 1e4, 1e4}, {3, 3.1, 2, 2.1});
  ASSERT_FALSE(two_sizes.ok());
  EXPECT_THAT(two_sizes.status().message(), HasSubstr("at least 3 sizes"));
  // Loss that grows with size: no decreasing power law fits.
  auto growing = FitPowerLaw(kSizes, {1.0, 1.2, 1.5, 1.9, 2.4, 3.0});
  ASSERT_FALSE(growing.ok());
  EXPECT_THAT(growing.status().message(), HasSubstr("did not converge"));
  EXPECT_FALSE(FitPowerLaw({0, 1e3, 1e4, 1e5}, {3, 2, 1.5, 1.2}).ok());
}

TEST(CrossingSizes, WhereTwoCurvesMeet) {
  // 10 N^-0.5 + 1 = 100 N^-0.8 + 1  <=>  N^0.3 = 10  <=>  N = 10^(1/0.3).
  PowerLawFit first, second;
  first.a = 10, first.b = 0.5, first.c = 1;
  second.a = 100, second.b = 0.8, second.c = 1;
  std::vector<double> cross = CrossingSizes(first, second, 10, 1e6);
  ASSERT_EQ(cross.size(), 1u);
  EXPECT_NEAR(cross[0], std::pow(10.0, 1 / 0.3), 1e-6 * cross[0]);
  EXPECT_TRUE(CrossingSizes(first, second, 1e4, 1e6).empty());
}

TEST(FitPowerLaw, AgreesWithScipyCurveFit) {
  if (std::system("/usr/bin/python3 -c 'import scipy.optimize' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "skipped: /usr/bin/python3 has no scipy (apt-get install python3-scipy)";
  const std::vector<double> loss = Curve(50, 0.3, 1.5, {0.01, -0.02, 0.015, -0.005, 0.01, -0.01});
  std::ostringstream program;
  program.precision(17);
  program << "import numpy as np\nfrom scipy.optimize import curve_fit\nn = np.array([";
  for (double v : kSizes) program << v << ", ";
  program << "])\ny = np.array([";
  for (double v : loss) program << v << ", ";
  program << R"py(])
f = lambda n, a, b, c: a * n ** -b + c
p, cov = curve_fit(f, n, y, p0=[40, 0.25, 1.4], xtol=1e-15, ftol=1e-15, gtol=1e-15, maxfev=100000)
se = np.sqrt(np.diag(cov))
print(*[repr(float(v)) for v in list(p) + list(se)])
)py";
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/fit.py";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(program.str().c_str(), f);
  std::fclose(f);
  FILE* p = popen(("/usr/bin/python3 " + path).c_str(), "r");
  std::vector<double> scipy;
  double v;
  while (std::fscanf(p, "%lf", &v) == 1) scipy.push_back(v);
  ASSERT_EQ(pclose(p), 0);
  ASSERT_EQ(scipy.size(), 6u);
  auto fit = FitPowerLaw(kSizes, loss);
  ASSERT_TRUE(fit.ok()) << fit.status();
  // The same least-squares optimum; standard errors from the same
  // covariance formula (scipy's Jacobian is a finite difference: looser).
  EXPECT_NEAR(fit->a, scipy[0], 1e-6 * std::abs(scipy[0]));
  EXPECT_NEAR(fit->b, scipy[1], 1e-6 * std::abs(scipy[1]));
  EXPECT_NEAR(fit->c, scipy[2], 1e-6 * std::abs(scipy[2]));
  EXPECT_NEAR(fit->a_se, scipy[3], 1e-3 * scipy[3]);
  EXPECT_NEAR(fit->b_se, scipy[4], 1e-3 * scipy[4]);
  EXPECT_NEAR(fit->c_se, scipy[5], 1e-3 * scipy[5]);
}

}  // namespace
}  // namespace tvlab
