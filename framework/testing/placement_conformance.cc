// Conformance for every norm placement linked into the test binary, with
// every normalization linked beside it.

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/nn/layers.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using Pair = std::tuple<std::string, std::string>;  // (placement, norm)

std::vector<Pair> AllPairs() {
  std::vector<Pair> pairs;
  for (const auto& p : PluginsUnderTest("placement"))
    for (const auto& n : PluginsUnderTest("normalization")) pairs.emplace_back(p, n);
  return pairs;
}

class PlacementConformance : public ::testing::TestWithParam<Pair> {
 protected:
  void SetUp() override {
    PlacementArgs args;
    args.dims = SmallDims();
    const std::string norm = std::get<1>(GetParam());
    args.make_norm = [norm, dims = args.dims] { return MakeNormalization(norm, dims); };
    placement_ = MakeNormPlacement(std::get<0>(GetParam()), args);
    wrapper_ = placement_->Wrap();
    InitializeParameters(*wrapper_, 3);
    sublayer_ = std::make_unique<nn::Linear>(8, 8);
    InitializeParameters(*sublayer_, 4);
  }
  Var Run(const Var& x) const {
    return wrapper_->Forward(x, [this](const Var& h) { return sublayer_->Forward(h); });
  }
  std::unique_ptr<NormPlacement> placement_;
  std::unique_ptr<ResidualWrapper> wrapper_;
  std::unique_ptr<nn::Linear> sublayer_;
};

TEST_P(PlacementConformance, ShapeIsPreservedAndTheResidualPathExists) {
  Var x = RandomVar({2, 3, 8}, 1);
  Tensor y = Run(x).value();
  EXPECT_EQ(y.shape(), (Shape{2, 3, 8}));
  // With a sublayer that outputs zeros, x still reaches the output through
  // the residual path.
  Tensor zero_sub = wrapper_->Forward(x, [](const Var& h) { return Scale(h, 0.0f); }).value();
  EXPECT_GT(MaxAbsDiff(zero_sub, Tensor::Zeros(zero_sub.shape())), 0.1f);
}

TEST_P(PlacementConformance, GradientsMatchFiniteDifferences) {
  std::vector<Var> inputs = {RandomVar({2, 8}, 2)};
  for (Var& p : ParameterVars(*wrapper_)) inputs.push_back(p);
  for (Var& p : ParameterVars(*sublayer_)) inputs.push_back(p);
  GradCheckResult r =
      GradCheck([&](const std::vector<Var>& v) { return Project(Run(v[0])); }, inputs);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST_P(PlacementConformance, EveryBackendMatchesReference) {
  Var x = RandomVar({3, 8}, 5);
  Tensor want;
  {
    ScopedBackend ref("reference");
    want = Run(x).value();
  }
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    EXPECT_LE(MaxAbsDiff(Run(x).value(), want), 1e-5f) << backend;
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, PlacementConformance, ::testing::ValuesIn(AllPairs()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace tvlab
