// ReGLU's own math: the gated product on hand-set one-unit weights (zero
// where the gate is negative), the hidden-width rule (d_model 64 -> 172, as
// swiglu and geglu), three matrices of parameters, and the multiple_of check.

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/ffn/reglu/reglu.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Ffn> Make(const ModelDims& dims, int multiple_of = 4) {
  RegluFfnOptions options;
  options.set_multiple_of(multiple_of);
  return (*FfnRegistry().Get("reglu"))->create(options, dims);
}

ModelDims Dims(int64_t d_model, int64_t d_ff, bool bias) {
  ModelDims dims = SmallDims();
  dims.d_model = d_model, dims.d_ff = d_ff, dims.bias = bias;
  return dims;
}

TEST(RegluFfn, GatesTheLinearBranchWithRelu) {
  auto ffn = Make(Dims(1, 1, false));
  const std::map<std::string, float> w = {{"w_1.weight", 0.7f}, {"w_3.weight", -1.3f}, {"w_2.weight", 0.4f}};
  for (auto& [name, var] : ffn->NamedParameters()) var.mutable_value().data()[0] = w.at(name);
  const std::vector<float> xs = {-3.0f, -0.5f, 0.0f, 0.3f, 1.0f, 3.0f};
  Tensor x = Tensor::Zeros({1, 6, 1});
  std::copy(xs.begin(), xs.end(), x.data());
  std::vector<float> y = ffn->Forward(Var(x), {}).value().ToVector();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double gate = 0.7 * xs[i] > 0 ? 0.7 * xs[i] : 0.0;
    EXPECT_NEAR(y[i], 0.4 * gate * (-1.3 * xs[i]), 1e-6) << xs[i];
  }
  EXPECT_EQ(y[0], 0.0f);  // negative gate: exactly zero
}

int64_t HiddenWidth(const Ffn& ffn) {
  for (auto& [name, var] : ffn.NamedParameters())
    if (name == "w_1.weight") return var.dim(0);
  return -1;
}

TEST(RegluFfn, HiddenWidthRule) {
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false))), 172);     // int(512 / 3) = 170 -> 172
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 0, false), 1)), 170);
  EXPECT_EQ(HiddenWidth(*Make(Dims(64, 100, false))), 100);   // model.d_ff wins
}

TEST(RegluFfn, ThreeMatrices) {
  EXPECT_EQ(Make(Dims(64, 172, false))->NumParameters(), 3 * 64 * 172);
  EXPECT_EQ(Make(Dims(8, 16, true))->NumParameters(), 3 * 8 * 16 + 2 * 16 + 8);
}

TEST(RegluFfn, MultipleOfMustBePositive) {
  RegluFfnOptions options;
  options.set_multiple_of(0);
  absl::Status status = (*FfnRegistry().Get("reglu"))->validate(options, SmallDims());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("options.multiple_of must be >= 1 (got 0)"), std::string::npos) << status;
}

}  // namespace
}  // namespace tvlab
