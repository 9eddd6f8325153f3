// GELU's own math: with one-unit, bias-free weights of 1 the FFN is the
// activation itself, checked against the exact erf form and the tanh form
// (which differ by ~1.5e-4 at x = 1, so the option really switches).

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/ffn/gelu/gelu.pb.h"

namespace tvlab {
namespace {

// y = gelu(x) for x in `xs`, through the FFN with w_1 = w_2 = 1.
std::vector<float> Activation(bool tanh_approximation, const std::vector<float>& xs) {
  ModelDims dims = SmallDims();
  dims.d_model = 1, dims.d_ff = 1, dims.bias = false;
  GeluFfnOptions options;
  options.set_tanh_approximation(tanh_approximation);
  const auto* entry = *FfnRegistry().Get("gelu");
  auto ffn = entry->create(options, dims);
  for (auto& [name, var] : ffn->NamedParameters()) var.mutable_value().data()[0] = 1.0f;
  Tensor x = Tensor::Zeros({1, static_cast<int64_t>(xs.size()), 1});
  std::copy(xs.begin(), xs.end(), x.data());
  return ffn->Forward(Var(x), {}).value().ToVector();
}

const std::vector<float> kXs = {-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f, 4.0f};

TEST(GeluFfn, DefaultIsTheExactErfForm) {
  std::vector<float> y = Activation(false, kXs);
  for (size_t i = 0; i < kXs.size(); ++i) {
    double x = kXs[i];
    EXPECT_NEAR(y[i], 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))), 2e-6) << x;
  }
  EXPECT_NEAR(y[5], 0.8413447, 1e-6);  // Phi(1), the textbook value
}

TEST(GeluFfn, TanhApproximationOption) {
  std::vector<float> y = Activation(true, kXs);
  for (size_t i = 0; i < kXs.size(); ++i) {
    double x = kXs[i];
    double inner = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    EXPECT_NEAR(y[i], 0.5 * x * (1.0 + std::tanh(inner)), 2e-6) << x;
  }
  EXPECT_GT(std::fabs(y[5] - Activation(false, kXs)[5]), 1e-4);
}

TEST(GeluFfn, WidthDefaultsToFourTimesTheModel) {
  ModelDims dims = SmallDims();
  dims.d_ff = 0;
  auto ffn = MakeFfn("gelu", dims);
  for (auto& [name, var] : ffn->NamedParameters()) {
    if (name == "w_1.weight") {
      EXPECT_EQ(var.shape(), (Shape{32, 8}));
    }
  }
  EXPECT_EQ(ffn->NumParameters(), 2 * 8 * 32 + 32 + 8);
}

}  // namespace
}  // namespace tvlab
