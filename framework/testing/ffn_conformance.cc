// Conformance for every FFN linked into the test binary.

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class FfnConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ffn_ = MakeFfn(GetParam(), SmallDims()); }
  std::unique_ptr<Ffn> ffn_;
};

TEST_P(FfnConformance, ShapeIsPreserved) {
  EXPECT_EQ(ffn_->Forward(RandomVar({2, 3, 8}, 1), {}).shape(), (Shape{2, 3, 8}));
}

TEST_P(FfnConformance, ActsOnEachPositionIndependently) {
  // Swapping two tokens swaps their outputs and changes nothing else.
  Tensor x = RandomTensor({1, 3, 8}, 2);
  Tensor swapped = x.Clone();
  std::copy(x.data(), x.data() + 8, swapped.data() + 16);
  std::copy(x.data() + 16, x.data() + 24, swapped.data());
  Tensor y = ffn_->Forward(Var(x), {}).value(), ys = ffn_->Forward(Var(swapped), {}).value();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(y.data()[i], ys.data()[16 + i]);
    EXPECT_EQ(y.data()[8 + i], ys.data()[8 + i]);
  }
}

TEST_P(FfnConformance, GradientsMatchFiniteDifferences) {
  std::vector<Var> inputs = {RandomVar({2, 8}, 3, -2.0f, 2.0f)};
  for (Var& p : ParameterVars(*ffn_)) inputs.push_back(p);
  GradCheckResult r = GradCheck(
      [&](const std::vector<Var>& v) { return Project(ffn_->Forward(v[0], {})); }, inputs);
  EXPECT_TRUE(r.ok) << r.message;
}

// Every auxiliary loss the FFN declares (MoE load balancing, router
// z-loss, ...) has the gradient of its value; every declared output is
// emitted by a training forward (plugin_test_util.h).
TEST_P(FfnConformance, AuxiliaryLossGradientsMatchFiniteDifferences) {
  const ForwardContext train{true, 5, 9};
  EXPECT_EQ(AuxiliaryOutputFailures(
                *ffn_, [&](const std::vector<Var>& v) { ffn_->Forward(v[0], train); },
                {RandomVar({2, 3, 8}, 6, -2.0f, 2.0f)}),
            "");
}

TEST_P(FfnConformance, DeterministicDropoutAndBackendIndependent) {
  ModelDims dims = SmallDims();
  dims.dropout = 0.5f;
  auto ffn = MakeFfn(GetParam(), dims);
  Var x = RandomVar({2, 3, 8}, 4);
  ForwardContext train{true, 5, 9};
  EXPECT_EQ(ffn->Forward(x, train).value().ToVector(), ffn->Forward(x, train).value().ToVector());
  Tensor want;
  {
    ScopedBackend ref("reference");
    want = ffn_->Forward(x, {}).value();
  }
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    EXPECT_LE(MaxAbsDiff(ffn_->Forward(x, {}).value(), want), 1e-5f) << backend;
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, FfnConformance,
                         ::testing::ValuesIn(PluginsUnderTest("ffn")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
