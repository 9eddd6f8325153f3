// SwiGLU's own math: the gated product on hand-set one-unit weights, the
// hidden-width rule (the seed's Llama block: d_model 64 -> 172), three
// matrices of parameters, and the multiple_of check.

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/ffn/swiglu/swiglu.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Ffn> Make(const ModelDims& dims, int multiple_of = 4) {
  SwigluFfnOptions options;
  options.set_multiple_of(multiple_of);
  return (*FfnRegistry().Get("swiglu"))->create(options, dims);
}

ModelDims Dims(int64_t d_model, int64_t d_ff, bool bias) {
  ModelDims dims = SmallDims();
  dims.d_model = d_model, dims.d_ff = d_ff, dims.bias = bias;
  return dims;
}

TEST(SwigluFfn, GatesTheLinearBranchWithSilu) {
  auto ffn = Make(Dims(1, 1, false));
  const std::map<std::string, float> w = {{"w_1.weight", 0.7f}, {"w_3.weight", -1.3f},
                                          {"w_2.weight", 0.4f}};
  for (auto& [name, var] : ffn->NamedParameters()) var.mutable_value().data()[0] = w.at(name);
  const std::vector<float> xs = {-2.0f, -0.5f, 0.0f, 0.3f, 1.0f, 3.0f};
  Tensor x = Tensor::Zeros({1, 6, 1});
  std::copy(xs.begin(), xs.end(), x.data());
  std::vector<float> y = ffn->Forward(Var(x), {}).value().ToVector();
  for (size_t i = 0; i < xs.size(); ++i) {
    double g = 0.7 * xs[i], up = -1.3 * xs[i];
    double silu = g / (1.0 + std::exp(-g));
    EXPECT_NEAR(y[i], 0.4 * silu * up, 1e-6) << xs[i];
  }
}

int64_t HiddenWidth(const Ffn& ffn) {
  for (auto& [name, var] : ffn.NamedParameters())
    if (name == "w_1.weight") return var.dim(0);
  return -1;
}

TEST(SwigluFfn, HiddenWidthRule) {
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false))), 172);  // the seed's Llama block
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false), 256)), 256);
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false), 1)), 170);  // int(512 / 3)
  EXPECT_EQ(HiddenWidth(*Make(Dims(4096, 0, false), 256)), 11008);  // Llama-7B
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 100, false))), 100);  // model.d_ff wins
}

TEST(SwigluFfn, ThreeMatrices) {
  EXPECT_EQ(Make(Dims(64, 172, false))->NumParameters(), 3 * 64 * 172);
  EXPECT_EQ(Make(Dims(8, 16, true))->NumParameters(), 3 * 8 * 16 + 2 * 16 + 8);
}

TEST(SwigluFfn, MultipleOfMustBePositive) {
  SwigluFfnOptions options;
  options.set_multiple_of(0);
  absl::Status status = (*FfnRegistry().Get("swiglu"))->validate(options, SmallDims());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("options.multiple_of must be >= 1 (got 0)"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace tvlab
