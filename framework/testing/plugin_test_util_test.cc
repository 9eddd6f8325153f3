// plugin_test_util's plugin construction, where no plugin is linked (a
// framework test never links plugins/): a missing plugin is a test's
// missing dependency, named as the Bazel target to add.

#include "framework/testing/plugin_test_util.h"

#include "framework/autograd/ops.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(PluginTestUtil, APluginNotLinkedNamesTheTargetToAdd) {
  EXPECT_DEATH(MakeAttentionLayout("mqa", SmallDims()),
               "this test uses the attention layout plugin 'mqa', which is not linked into it: "
               "add \"//plugins/attention/mqa\" to the test's deps \\(in a plugin folder: "
               "test_deps of its tvlab_plugin\\(\\) in BUILD.bazel\\)");
  EXPECT_DEATH(MakeNormPlacement("post_ln", PlacementArgs{}), "add \"//plugins/placement/post_ln\"");
  EXPECT_DEATH(MakeFfn("swiglu", SmallDims()), "add \"//plugins/ffn/swiglu\"");
}

// A module whose auxiliary loss is sum(w * x)^2, with its gradient written
// right or (`wrong_gradient`) half as large as it is, and a statistic.
class SquaredAuxiliary : public Module {
 public:
  explicit SquaredAuxiliary(bool wrong_gradient, bool emit_statistic = true)
      : wrong_gradient_(wrong_gradient), emit_statistic_(emit_statistic) {
    w_ = AddParameter("w", {3}, Init::Ones());
    DeclareAuxiliaryLoss("square_loss", 0.5f);
    DeclareAuxiliaryStatistic("mean_input");
  }
  void Forward(const Var& x) const {
    if (!CollectingAuxiliaryOutputs()) return;
    Var s = Sum(Mul(x, w_));  // scalar
    const float value = s.value().item();
    const float factor = wrong_gradient_ ? 1.0f : 2.0f;  // d s^2 / d s = 2 s
    Var square = MakeResult(Tensor::FromVector(s.shape(), {value * value}), {s}, [s, value, factor](const Tensor& g) {
      AccumulateGrad(*s.node(), Tensor::FromVector(s.shape(), {factor * value * g.item()}));
    });
    EmitAuxiliaryLoss("square_loss", square);
    if (emit_statistic_) EmitAuxiliaryStatistic("mean_input", Mean(x));
  }

 private:
  bool wrong_gradient_, emit_statistic_;
  Var w_;
};

TEST(PluginTestUtil, AuxiliaryLossWithAWrongGradientFails) {
  Var x(Tensor::FromVector({3}, {0.3f, -0.7f, 1.1f}), /*requires_grad=*/true);
  SquaredAuxiliary right(false), wrong(true);
  InitializeParameters(right, 1), InitializeParameters(wrong, 1);  // w = 1
  auto forward = [](const SquaredAuxiliary& m) { return [&m](const std::vector<Var>& in) { m.Forward(in[0]); }; };
  EXPECT_EQ(AuxiliaryOutputFailures(right, forward(right), {x}), "");
  const std::string failures = AuxiliaryOutputFailures(wrong, forward(wrong), {x});
  EXPECT_NE(failures.find("square_loss: gradient differs from finite differences"), std::string::npos) << failures;
}

TEST(PluginTestUtil, DeclaredAuxiliaryOutputNeverEmittedFails) {
  Var x(Tensor::FromVector({3}, {0.3f, -0.7f, 1.1f}), /*requires_grad=*/true);
  SquaredAuxiliary silent(false, /*emit_statistic=*/false);
  EXPECT_EQ(AuxiliaryOutputFailures(silent, [&](const std::vector<Var>& in) { silent.Forward(in[0]); }, {x}),
            "mean_input: declared but not emitted by a training forward\n");
}

}  // namespace
}  // namespace tvlab
