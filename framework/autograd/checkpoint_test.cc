// Checkpoint must be invisible in results: the same value and the same
// gradients (inputs, and parameters read inside) as running fn on the tape,
// while keeping none of fn's intermediates on the outer tape.

#include "framework/autograd/checkpoint.h"

#include <cmath>
#include <cstring>

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/tensor/device_memory.h"
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

// CheckpointPolicy::kKeepMatMuls: fn = tanh((x + y) w) * (x w), with a
// plain Checkpoint nested around its second product (as the query-chunked
// attention nests one inside a selective block). The rerun must hand back
// the first run's products (the same storage) and compute the elementwise
// ops afresh, and the value and gradients must be those of the taped
// function to the bit.
TEST_F(CheckpointTest, KeepMatMulsRerunsOnlyTheElementwiseOps) {
  Var x = RandomVar({4, 3}, 1), y = RandomVar({4, 3}, 2), w = RandomVar({3, 5}, 3);
  std::vector<const float*> products;  // the first product's storage, per run
  auto fn = [&](const std::vector<Var>& in) {
    Var first = MatMul(Add(in[0], in[1]), w);  // (4, 5)
    Var second = Checkpoint([&](const std::vector<Var>& v) { return MatMul(v[0], w); }, {in[0]});  // (4, 5)
    Var t = Tanh(first);
    products.push_back(first.value().ptr());
    return Mul(t, second);
  };
  Var f = fn({x, y});
  Var taped = Sum(Mul(f, f));
  Backward(taped);
  const Tensor gx = x.grad().Clone(), gy = y.grad().Clone(), gw = w.grad().Clone();
  x.ZeroGrad(), y.ZeroGrad(), w.ZeroGrad();
  products.clear();

  // Between forward and backward the products are held: more bytes in use
  // than with kRecomputeAll (the rerun could not reuse the first product's
  // storage for a fresh one, so equal addresses below mean it was kept).
  CachingAllocator& allocator = AllocatorFor(CurrentDevice());
  const int64_t before = allocator.Stats().in_use_bytes;
  int64_t held_all = 0;
  {
    Var all = Checkpoint(fn, {x, y});
    held_all = allocator.Stats().in_use_bytes - before;
  }
  products.clear();
  Var c = Checkpoint(fn, {x, y}, CheckpointPolicy::kKeepMatMuls);
  EXPECT_GE(allocator.Stats().in_use_bytes - before, held_all + 4 * 5 * 4) << "the first product is not held";
  Var ckpt = Sum(Mul(c, c));
  ASSERT_EQ(products.size(), 1u);
  Backward(ckpt);
  ASSERT_EQ(products.size(), 2u);  // rerun once
  EXPECT_EQ(products[1], products[0]) << "the rerun computed the product again";
  auto bits = [](const Tensor& a, const Tensor& b) {
    const std::vector<float> p = a.ToVector(), q = b.ToVector();
    return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(bits(ckpt.value(), taped.value()));
  EXPECT_TRUE(bits(x.grad(), gx));
  EXPECT_TRUE(bits(y.grad(), gy));
  EXPECT_TRUE(bits(w.grad(), gw));
}

// Without gradients nothing is kept or rerun, and a store is never left
// current: an op after the checkpoint computes.
TEST_F(CheckpointTest, KeepMatMulsWithoutGradientsKeepsNothing) {
  Var x = RandomVar({4, 3}, 1, /*requires_grad=*/false), w = RandomVar({3, 5}, 3, false);
  int calls = 0;
  Var c = Checkpoint(Block{w, &calls}, {x, x}, CheckpointPolicy::kKeepMatMuls);
  EXPECT_FALSE(c.requires_grad());
  EXPECT_EQ(calls, 1);
  ExpectSame(MatMul(x, w).value(), MatMul(x, w).value(), "product after the checkpoint");
}

}  // namespace
}  // namespace tvlab
