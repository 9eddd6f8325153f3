// Squared ReLU's own math on hand-set one-unit weights (0 for a negative
// pre-activation, its square otherwise), the width rule (4 * d_model) and
// two matrices of parameters, as the ReLU FFN.

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/ffn/relu2/relu2.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Ffn> Make(const ModelDims& dims) {
  return (*FfnRegistry().Get("relu2"))->create(Relu2FfnOptions(), dims);
}

ModelDims Dims(int64_t d_model, int64_t d_ff, bool bias) {
  ModelDims dims = SmallDims();
  dims.d_model = d_model, dims.d_ff = d_ff, dims.bias = bias;
  return dims;
}

TEST(Relu2Ffn, SquaresThePositivePart) {
  auto ffn = Make(Dims(1, 1, false));
  const std::map<std::string, float> w = {{"w_1.weight", 0.7f}, {"w_2.weight", -0.4f}};
  for (auto& [name, var] : ffn->NamedParameters()) var.mutable_value().data()[0] = w.at(name);
  const std::vector<float> xs = {-3.0f, -0.5f, 0.0f, 0.3f, 1.0f, 3.0f};
  Tensor x = Tensor::Zeros({1, 6, 1});
  std::copy(xs.begin(), xs.end(), x.data());
  std::vector<float> y = ffn->Forward(Var(x), {}).value().ToVector();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double h = 0.7 * xs[i] > 0 ? 0.7 * xs[i] : 0.0;
    EXPECT_NEAR(y[i], -0.4 * h * h, 1e-6) << xs[i];
  }
}

TEST(Relu2Ffn, TwoMatricesOfTheReluWidth) {
  EXPECT_EQ(Make(Dims(8, 0, false))->NumParameters(), 2 * 8 * 32);  // F = 4 * 8
  EXPECT_EQ(Make(Dims(8, 16, true))->NumParameters(), 2 * 8 * 16 + 16 + 8);
}

}  // namespace
}  // namespace tvlab
