// Every op's finite-difference gradient check, on every registered backend
// (their forward values: ops_forward_test.cc).

#include "framework/autograd/ops.h"

#include <cmath>
#include <utility>
#include <vector>

#include "framework/autograd/gradcheck.h"
#include "framework/backend/backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Var RandomVar(const Shape& shape, uint64_t salt, float lo = -1.0f, float hi = 1.0f) {
  RngStream rng(99, RngPurpose::kInit, salt);
  std::vector<float> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = lo + (hi - lo) * rng.Uniform(i);
  // On the backend under test's device (the simulated device too).
  return Var(Tensor::FromVector(shape, values), /*requires_grad=*/true);
}

// A fixed random projection to a scalar, so every output element matters.
Var Project(const Var& y, uint64_t salt = 777) {
  Var w = RandomVar(y.shape(), salt);
  w = Var(w.value(), false);
  return Sum(Mul(y, w));
}

void ExpectGradOk(const std::function<Var(const std::vector<Var>&)>& f,
                  const std::vector<Var>& inputs) {
  GradCheckResult r = GradCheck(f, inputs);
  EXPECT_TRUE(r.ok) << r.message;
}

class OpsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(GetParam());
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda on a machine without a GPU
    scoped_ = std::make_unique<ScopedBackend>(GetParam());
    // A backend that lacks kernels is refused by validation; nothing to test.
    if (!MissingKernels(CurrentBackend()).empty())
      GTEST_SKIP() << GetParam() << " does not implement every kernel yet";
  }
  std::unique_ptr<ScopedBackend> scoped_;
};

TEST_P(OpsTest, BroadcastingBinaryGradients) {
  Var a = RandomVar({2, 3, 4}, 1), b = RandomVar({4}, 2, 0.5f, 1.5f), c = RandomVar({3, 1}, 3);
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Add(v[0], v[1])); }, {a, b});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Sub(v[0], v[1])); }, {a, c});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Mul(v[0], v[1])); }, {a, c});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Div(v[0], v[1])); }, {a, b});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(AddScalar(Scale(v[0], 3.f), 1.f)); }, {a});
}

TEST_P(OpsTest, UnaryGradients) {
  Var x = RandomVar({3, 5}, 4, 0.2f, 1.5f);  // positive: log and sqrt defined
  for (auto fn : std::vector<Var (*)(const Var&)>{Relu, Silu, Sigmoid, Tanh, Exp, Log, Sqrt, Square}) {
    ExpectGradOk([fn](const std::vector<Var>& v) { return Project(fn(v[0])); }, {x});
  }
  Var y = RandomVar({3, 5}, 5, -2.0f, 2.0f);
  for (bool approx : {false, true}) {
    ExpectGradOk([approx](const std::vector<Var>& v) { return Project(Gelu(v[0], approx)); }, {y});
  }
}

TEST_P(OpsTest, MatMulAllTransposesAndSharedWeight) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Var a = RandomVar(ta ? Shape{2, 4, 3} : Shape{2, 3, 4}, 6);
      Var b = RandomVar(tb ? Shape{2, 5, 4} : Shape{2, 4, 5}, 7);
      ExpectGradOk([ta, tb](const std::vector<Var>& v) { return Project(MatMul(v[0], v[1], ta, tb)); },
                   {a, b});
    }
  }
  Var x = RandomVar({2, 3, 4}, 8), w = RandomVar({5, 4}, 9), bias = RandomVar({5}, 10);
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Linear(v[0], v[1], v[2])); },
               {x, w, bias});
  // Values: [1 2; 3 4] @ [5 6; 7 8]^T = [17 23; 39 53].
  Var p(Tensor::FromVector({2, 2}, {1, 2, 3, 4})), q(Tensor::FromVector({2, 2}, {5, 6, 7, 8}));
  EXPECT_EQ(MatMul(p, q, false, true).value().ToVector(), (std::vector<float>{17, 23, 39, 53}));
}

TEST_P(OpsTest, SoftmaxNormalizeAndShapes) {
  Var x = RandomVar({2, 3, 6}, 11);
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Softmax(v[0])); }, {x});
  Var g = RandomVar({6}, 12), b = RandomVar({6}, 13);
  for (bool subtract_mean : {true, false}) {
    ExpectGradOk([subtract_mean](const std::vector<Var>& v) {
      return Project(Normalize(v[0], v[1], v[2], 1e-5f, subtract_mean));
    }, {x, g, b});
  }
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Permute(v[0], {2, 0, 1})); }, {x});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Reshape(v[0], {6, -1})); }, {x});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Slice(v[0], 2, 1, 3)); }, {x});
  ExpectGradOk([](const std::vector<Var>& v) { return Project(Concat({v[0], Scale(v[0], 2.f)}, 1)); }, {x});
  Var h = RandomVar({1, 2, 3, 2}, 14);
  ExpectGradOk([](const std::vector<Var>& v) { return Project(RepeatHeads(v[0], 3)); }, {h});
  EXPECT_EQ(RepeatHeads(h, 3).shape(), (Shape{1, 6, 3, 2}));
}

TEST_P(OpsTest, EmbeddingAndCrossEntropy) {
  Var table = RandomVar({5, 3}, 15);
  std::vector<int32_t> ids = {4, 0, 4, 2};
  ExpectGradOk([ids](const std::vector<Var>& v) { return Project(Embedding(v[0], ids)); }, {table});
  Var logits = RandomVar({4, 5}, 16, -2.f, 2.f);
  std::vector<int32_t> targets = {1, -100, 4, 0};
  for (float smoothing : {0.0f, 0.1f}) {
    ExpectGradOk([targets, smoothing](const std::vector<Var>& v) {
      return CrossEntropy(v[0], targets, -100, smoothing);
    }, {logits});
  }
  // Uniform logits over V classes: loss = log V.
  Var zeros(Tensor::Zeros({2, 10}));
  EXPECT_NEAR(CrossEntropy(zeros, {3, 7}).value().item(), std::log(10.0f), 1e-6f);
}

TEST_P(OpsTest, DropoutIsDeterministicAndUnbiased) {
  Var x(Tensor::Full({10000}, 1.0f), true);
  RngStream s(3, RngPurpose::kDropout, 5);
  Var y1 = Dropout(x, 0.25f, s), y2 = Dropout(x, 0.25f, s);
  EXPECT_EQ(y1.value().ToVector(), y2.value().ToVector());
  double mean = 0;
  int zeros = 0;
  for (float v : y1.value().ToVector()) mean += v, zeros += v == 0.0f;
  EXPECT_NEAR(mean / 10000, 1.0, 0.03);
  EXPECT_NEAR(zeros / 10000.0, 0.25, 0.02);
  ExpectGradOk([s](const std::vector<Var>& v) { return Project(Dropout(v[0], 0.5f, s)); },
               {RandomVar({4, 4}, 17)});
}

// Data parallelism: a rank holding rows [first, first + rows) of a batch
// draws exactly those rows of the whole batch's mask (docs/distributed.md),
// also where the rows start at an odd element (15 elements per row here).
TEST_P(OpsTest, DropoutOfABatchShardIsTheWholeBatchMaskOfItsRows) {
  const int64_t batch = 6, per_row = 5 * 3;
  RngStream s(3, RngPurpose::kDropout, 5);
  const std::vector<float> whole =
      Dropout(Var(Tensor::Full({batch, 5, 3}, 1.0f)), 0.5f, s).value().ToVector();  // (6, 5, 3)
  int zeros = 0;
  for (float v : whole) zeros += v == 0.0f;
  ASSERT_GT(zeros, 0);  // a mask, not all ones
  for (const auto& [first, rows] : std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {1, 2}, {2, 2}, {3, 3}, {5, 1}}) {
    const std::vector<float> shard =
        Dropout(Var(Tensor::Full({rows, 5, 3}, 1.0f)), 0.5f, s.ForBatchRows(first, rows)).value().ToVector();
    const std::vector<float> expected(whole.begin() + first * per_row, whole.begin() + (first + rows) * per_row);
    EXPECT_EQ(shard, expected) << "rows [" << first << ", " << first + rows << ")";
  }
}

TEST_P(OpsTest, NoGradGuardRecordsNothing) {
  Var x = RandomVar({3}, 18);
  NoGradGuard guard;
  Var y = Scale(x, 2.0f);
  EXPECT_FALSE(y.requires_grad());
}

// AccumulateGrad shares a first gradient instead of cloning it (var.cc): an
// Add hands its output gradient to both inputs. Accumulating more into one
// of them, and writing into a leaf's gradient afterwards, must never change
// the other.
TEST_P(OpsTest, SharedGradientsAreNeverWrittenThrough) {
  // a gets the shared buffer first (from the outer Add), then 2g from Scale
  // later in the backward pass; b shares the same buffer through the inner
  // Add. Writing the second gradient in place would make b's gradient 3g.
  Var a = RandomVar({2, 3}, 20), b = RandomVar({2, 3}, 21);
  Var w(Tensor::FromVector({2, 3}, {1, -2, 3, -4, 5, -6}));
  Backward(Sum(Mul(Add(a, Add(b, Scale(a, 2.0f))), w)));
  EXPECT_EQ(a.grad().ToVector(), std::vector<float>({3, -6, 9, -12, 15, -18}));
  EXPECT_EQ(b.grad().ToVector(), std::vector<float>({1, -2, 3, -4, 5, -6}));
  // Leaves own their gradients: scaling one (as clipping does) leaves the
  // other alone.
  Var c = RandomVar({4}, 22), d = RandomVar({4}, 23);
  Backward(Sum(Add(c, d)));
  c.mutable_grad().Fill(5.0f);
  for (float v : d.grad().ToVector()) EXPECT_EQ(v, 1.0f);
}

INSTANTIATE_TEST_SUITE_P(AllBackends, OpsTest, ::testing::ValuesIn(RegisteredBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
