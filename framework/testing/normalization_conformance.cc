// Conformance for every normalization linked into the test binary.

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class NormalizationConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { norm_ = MakeNormalization(GetParam(), SmallDims()); }
  std::unique_ptr<Normalization> norm_;
};

TEST_P(NormalizationConformance, ShapeIsPreserved) {
  EXPECT_EQ(norm_->Forward(RandomVar({2, 3, 8}, 1)).shape(), (Shape{2, 3, 8}));
}

TEST_P(NormalizationConformance, InvariantToScalingItsInput) {
  // Inputs of variance ~8 so that eps (1e-5 by default) is negligible.
  Var x = RandomVar({4, 8}, 2, -5.0f, 5.0f);
  Tensor y = norm_->Forward(x).value();
  Tensor y3 = norm_->Forward(Scale(x, 3.0f)).value();
  EXPECT_LE(MaxAbsDiff(y, y3), 1e-4f);
}

TEST_P(NormalizationConformance, InitialOutputRowsHaveUnitRootMeanSquare) {
  // What every norm is for: whatever the input's scale and offset, a freshly
  // initialised norm hands the next layer rows of RMS 1 (LayerNorm: mean 0 and
  // variance 1; RMSNorm: mean square 1).
  auto norm = MakeNormalization(GetParam(), SmallDims());
  std::vector<float> y = norm->Forward(RandomVar({4, 8}, 5, 2.0f, 40.0f)).value().ToVector();
  for (int row = 0; row < 4; ++row) {
    double sq = 0.0;
    for (int c = 0; c < 8; ++c) sq += y[row * 8 + c] * y[row * 8 + c];
    EXPECT_NEAR(sq / 8.0, 1.0, 1e-4) << "row " << row;
  }
}

TEST_P(NormalizationConformance, GradientsMatchFiniteDifferences) {
  std::vector<Var> inputs = {RandomVar({3, 8}, 3)};
  for (Var& p : ParameterVars(*norm_)) inputs.push_back(p);
  GradCheckResult r = GradCheck(
      [&](const std::vector<Var>& v) { return Project(norm_->Forward(v[0])); }, inputs);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST_P(NormalizationConformance, EveryBackendMatchesReference) {
  Var x = RandomVar({5, 8}, 4);
  Tensor want;
  {
    ScopedBackend ref("reference");
    want = norm_->Forward(x).value();
  }
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    EXPECT_LE(MaxAbsDiff(norm_->Forward(x).value(), want), 1e-5f) << backend;
    EXPECT_EQ(norm_->Forward(x).value().ToVector(), norm_->Forward(x).value().ToVector());
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, NormalizationConformance,
                         ::testing::ValuesIn(PluginsUnderTest("normalization")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
