// GEGLU's own math: the gated product with the exact and the tanh GELU on
// hand-set one-unit weights, the hidden-width rule (d_model 64 -> 172, as
// swiglu), three matrices of parameters, and the multiple_of check.

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/ffn/geglu/geglu.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Ffn> Make(const ModelDims& dims, bool tanh_approximation = false, int multiple_of = 4) {
  GegluFfnOptions options;
  options.set_tanh_approximation(tanh_approximation);
  options.set_multiple_of(multiple_of);
  return (*FfnRegistry().Get("geglu"))->create(options, dims);
}

ModelDims Dims(int64_t d_model, int64_t d_ff, bool bias) {
  ModelDims dims = SmallDims();
  dims.d_model = d_model, dims.d_ff = d_ff, dims.bias = bias;
  return dims;
}

double ExactGelu(double z) { return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))); }
double TanhGelu(double z) {
  return 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)));
}

TEST(GegluFfn, GatesTheLinearBranchWithGelu) {
  for (bool tanh_approximation : {false, true}) {
    auto ffn = Make(Dims(1, 1, false), tanh_approximation);
    const std::map<std::string, float> w = {{"w_1.weight", 0.7f}, {"w_3.weight", -1.3f},
                                            {"w_2.weight", 0.4f}};
    for (auto& [name, var] : ffn->NamedParameters()) var.mutable_value().data()[0] = w.at(name);
    const std::vector<float> xs = {-3.0f, -0.5f, 0.0f, 0.3f, 1.0f, 3.0f};
    Tensor x = Tensor::Zeros({1, 6, 1});
    std::copy(xs.begin(), xs.end(), x.data());
    std::vector<float> y = ffn->Forward(Var(x), {}).value().ToVector();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double g = 0.7 * xs[i], up = -1.3 * xs[i];
      const double gelu = tanh_approximation ? TanhGelu(g) : ExactGelu(g);
      EXPECT_NEAR(y[i], 0.4 * gelu * up, 1e-6) << xs[i] << " tanh " << tanh_approximation;
    }
  }
}

int64_t HiddenWidth(const Ffn& ffn) {
  for (auto& [name, var] : ffn.NamedParameters())
    if (name == "w_1.weight") return var.dim(0);
  return -1;
}

TEST(GegluFfn, HiddenWidthRule) {
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false))), 172);            // int(512 / 3) = 170 -> 172
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false), false, 1)), 170);
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 100, false))), 100);          // model.d_ff wins
}

TEST(GegluFfn, ThreeMatrices) {
  EXPECT_EQ(Make(Dims(64, 172, false))->NumParameters(), 3 * 64 * 172);
  EXPECT_EQ(Make(Dims(8, 16, true))->NumParameters(), 3 * 8 * 16 + 2 * 16 + 8);
}

TEST(GegluFfn, MultipleOfMustBePositive) {
  GegluFfnOptions options;
  options.set_multiple_of(0);
  absl::Status status = (*FfnRegistry().Get("geglu"))->validate(options, SmallDims());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("options.multiple_of must be >= 1 (got 0)"), std::string::npos) << status;
}

}  // namespace
}  // namespace tvlab
