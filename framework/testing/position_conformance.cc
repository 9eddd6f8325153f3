// Conformance for every position encoding linked into the test binary.

#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class PositionConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { pe_ = MakePositionEncoding(GetParam(), SmallDims()); }
  std::unique_ptr<PositionEncoding> pe_;
};

TEST_P(PositionConformance, ShapesArePreserved) {
  EXPECT_EQ(pe_->AddToEmbeddings(RandomVar({2, 5, 8}, 1), 0).shape(), (Shape{2, 5, 8}));
  EXPECT_EQ(pe_->RotateQueryOrKey(RandomVar({2, 2, 5, 4}, 2), 0).shape(), (Shape{2, 2, 5, 4}));
}

TEST_P(PositionConformance, AnOffsetContinuesTheSequence) {
  // Tokens at positions [3, 6) encode as the tail of positions [0, 6).
  Tensor full = RandomTensor({1, 6, 8}, 3);
  Tensor tail = Tensor::Zeros({1, 3, 8});
  std::copy(full.data() + 24, full.data() + 48, tail.data());
  Tensor a = pe_->AddToEmbeddings(Var(full), 0).value();
  Tensor b = pe_->AddToEmbeddings(Var(tail), 3).value();
  for (int i = 0; i < 24; ++i) EXPECT_NEAR(a.data()[24 + i], b.data()[i], 1e-6) << i;
}

TEST_P(PositionConformance, GradientsMatchFiniteDifferences) {
  std::vector<Var> inputs = {RandomVar({2, 4, 8}, 4)};
  for (Var& p : ParameterVars(*pe_)) inputs.push_back(p);
  GradCheckResult r = GradCheck(
      [&](const std::vector<Var>& v) { return Project(pe_->AddToEmbeddings(v[0], 1)); }, inputs);
  EXPECT_TRUE(r.ok) << r.message;
  GradCheckResult q = GradCheck(
      [&](const std::vector<Var>& v) { return Project(pe_->RotateQueryOrKey(v[0], 1)); },
      {RandomVar({1, 2, 4, 4}, 5)});
  EXPECT_TRUE(q.ok) << q.message;
}

TEST_P(PositionConformance, DeterministicAndBackendIndependent) {
  Var x = RandomVar({2, 4, 8}, 6);
  Tensor want;
  {
    ScopedBackend ref("reference");
    want = pe_->AddToEmbeddings(x, 2).value();
  }
  for (const std::string& backend : RegisteredBackends()) {
    ScopedBackend scoped(backend);
    EXPECT_LE(MaxAbsDiff(pe_->AddToEmbeddings(x, 2).value(), want), 1e-6f) << backend;
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, PositionConformance,
                         ::testing::ValuesIn(PositionEncodingRegistry().Names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
