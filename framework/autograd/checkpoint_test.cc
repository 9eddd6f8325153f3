// Checkpoint must be invisible in results: the same value and the same
// gradients (inputs, and parameters read inside) as running fn on the tape,
// while keeping none of fn's intermediates on the outer tape.

#include "framework/autograd/checkpoint.h"

#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Var RandomVar(const Shape& shape, uint64_t salt, bool requires_grad = true) {
  RngStream rng(7, RngPurpose::kInit, salt);
  std::vector<float> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = rng.Uniform(i) * 2.0f - 1.0f;
  return Var(Tensor::FromVector(shape, values), requires_grad);
}

void ExpectSame(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<float> x = a.ToVector(), y = b.ToVector();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(x[i], y[i]) << what << " [" << i << "]";
}

class CheckpointTest : public ::testing::Test {
 protected:
  ScopedBackend backend_{"reference"};
};

// x (4, 3), y (4, 3), w (3, 5) a parameter read inside fn:
// fn = tanh((x + y) w) * (x w)  -> (4, 5)
struct Block {
  Var w;
  int* calls;
  Var operator()(const std::vector<Var>& in) const {
    ++*calls;
    return Mul(Tanh(MatMul(Add(in[0], in[1]), w)), MatMul(in[0], w));
  }
};

TEST_F(CheckpointTest, SameValueAndGradientsAsTheTapedBlock) {
  int calls = 0;
  // Taped.
  Var x = RandomVar({4, 3}, 1), y = RandomVar({4, 3}, 2), w = RandomVar({3, 5}, 3);
  Block block{w, &calls};
  // w is also used outside the block, and x twice: gradients from the
  // recomputation and from the outer tape must add up.
  Var taped = Sum(Add(Mul(block({x, y}), block({x, y})), Sum(MatMul(x, w))));
  Backward(taped);
  const Tensor gx = x.grad(), gy = y.grad(), gw = w.grad();

  Var x2(x.value(), true), y2(y.value(), true), w2(w.value(), true);
  Block block2{w2, &calls};
  calls = 0;
  Var c = Checkpoint(block2, {x2, y2});
  Var ckpt = Sum(Add(Mul(c, c), Sum(MatMul(x2, w2))));
  EXPECT_EQ(calls, 1);
  // Only the inputs are kept: the checkpoint's node points at x2 and y2,
  // not at fn's intermediates.
  ASSERT_EQ(c.node()->inputs.size(), 2u);
  EXPECT_EQ(c.node()->inputs[0], x2.node());
  EXPECT_EQ(c.node()->inputs[1], y2.node());
  ExpectSame(ckpt.value(), taped.value(), "value");
  Backward(ckpt);
  EXPECT_EQ(calls, 2);  // recomputed once in backward
  ExpectSame(x2.grad(), gx, "dx");
  ExpectSame(y2.grad(), gy, "dy");
  ExpectSame(w2.grad(), gw, "dw");
}

TEST_F(CheckpointTest, NotRecomputedWithoutGradients) {
  int calls = 0;
  Var x = RandomVar({4, 3}, 1), y = RandomVar({4, 3}, 2), w = RandomVar({3, 5}, 3);
  NoGradGuard no_tape;
  Var c = Checkpoint(Block{w, &calls}, {x, y});
  EXPECT_FALSE(c.requires_grad());
  EXPECT_EQ(calls, 1);
}

TEST_F(CheckpointTest, ForwardRunsOffTheTape) {
  Var x = RandomVar({2, 2}, 1);
  bool taped_inside = true;
  Var c = Checkpoint(
      [&](const std::vector<Var>& in) {
        taped_inside = GradEnabled();
        return Tanh(in[0]);
      },
      {x});
  EXPECT_FALSE(taped_inside);
  EXPECT_TRUE(c.requires_grad());
  Backward(Sum(c));
  EXPECT_TRUE(taped_inside);  // the recomputation records its tape
  std::vector<float> xv = x.value().ToVector(), g = x.grad().ToVector();
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR(g[i], 1.0f - std::tanh(xv[i]) * std::tanh(xv[i]), 1e-6f);
}

}  // namespace
}  // namespace tvlab
