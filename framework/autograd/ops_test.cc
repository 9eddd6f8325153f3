// Every op, on every registered backend: a finite-difference gradient check,
// and its forward value on small inputs against its definition written out
// here from the math (loops and <cmath> in double precision, never a tvlab
// kernel).

#include "framework/autograd/ops.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
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
    const BackendDescriptor& backend = **FindBackend(GetParam());
    if (!backend.DevicePresent())  // e.g. gpu_cuda on a machine without a GPU
      GTEST_SKIP() << "backend '" << GetParam() << "' has no usable device here";
    // A backend that lacks kernels is refused by validation; nothing to test.
    if (!backend.MissingKernels().empty())
      GTEST_SKIP() << GetParam() << " does not implement every kernel yet";
    scoped_ = std::make_unique<ScopedBackend>(GetParam());
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
  // An input read by three Linears (attention's q, k and v): the second and
  // third dX are added into x's gradient as the GEMM writes them (beta 1),
  // and each bias gradient comes out of its weight gradient's pass.
  Var w2 = RandomVar({5, 4}, 11), b2 = RandomVar({5}, 12), w3 = RandomVar({3, 4}, 13), b3 = RandomVar({3}, 14);
  ExpectGradOk(
      [](const std::vector<Var>& v) {
        return Add(Add(Project(Linear(v[0], v[1], v[2]), 1), Project(Linear(v[0], v[3], v[4]), 2)),
                   Project(Linear(v[0], v[5], v[6]), 3));
      },
      {x, w, bias, w2, b2, w3, b3});
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
    // x's gradient so far added as the norm's dx is written
    // (NormalizeBackwardAdd): shared from a residual Add, or x's own.
    ExpectGradOk([subtract_mean](const std::vector<Var>& v) {
      return Project(Add(v[0], Normalize(v[0], v[1], v[2], 1e-5f, subtract_mean)));
    }, {x, g, b});
    ExpectGradOk([subtract_mean](const std::vector<Var>& v) {
      return Project(Add(Normalize(v[0], v[1], Var(), 1e-5f, subtract_mean), Mul(v[0], v[0])));
    }, {x, g});
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

// Forward values against their definitions.

Var V(const Shape& shape, const std::vector<float>& values) { return Var(Tensor::FromVector(shape, values)); }

// `got` has shape `shape` and, element by element, the values `want` to
// within `tolerance` relative (absolute below 1). The default allows float
// rounding and oneDNN's approximations of the transcendental functions
// (log within 6e-6 relative).
void ExpectValues(const Var& got, const Shape& shape, const std::vector<double>& want, double tolerance = 1e-5) {
  ASSERT_EQ(got.shape(), shape) << ShapeToString(got.shape());
  const std::vector<float> values = got.value().ToVector();
  ASSERT_EQ(values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(values[i], want[i], tolerance * std::max(1.0, std::abs(want[i]))) << "element " << i;
}

// f applied to every element.
std::vector<double> Map(const std::vector<float>& x, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (float v : x) out.push_back(f(v));
  return out;
}

// (2, 3) values with both signs and a zero.
const std::vector<float> kA = {-1.5f, -0.25f, 0.0f, 0.5f, 1.0f, 2.0f};

// RoPE's turn: its gradient, and its forward and backward the bits of the
// composition the rope plugin ran before (slices, products, a
// concatenation), in both pairings.
TEST_P(OpsTest, RotaryGradientsAndTheComposedBits) {
  const int64_t t = 3, d = 8;
  Var x = RandomVar({2, 2, t, d}, 21);
  const Tensor cos = RandomVar({t, d / 2}, 22).value(), sin = RandomVar({t, d / 2}, 23).value();
  for (bool interleaved : {false, true}) {
    ExpectGradOk([&](const std::vector<Var>& v) { return Project(Rotary(v[0], cos, sin, interleaved)); }, {x});
    Var a, b, c(cos), s(sin), composed;
    if (interleaved) {
      Var pairs = Reshape(x, {2, 2, t, d / 2, 2});
      a = Slice(pairs, 4, 0, 1), b = Slice(pairs, 4, 1, 1);
      c = Var(cos.Reshape({t, d / 2, 1})), s = Var(sin.Reshape({t, d / 2, 1}));
      composed = Reshape(Concat({Sub(Mul(a, c), Mul(b, s)), Add(Mul(a, s), Mul(b, c))}, 4), x.shape());
    } else {
      a = Slice(x, 3, 0, d / 2), b = Slice(x, 3, d / 2, d / 2);
      composed = Concat({Sub(Mul(a, c), Mul(b, s)), Add(Mul(a, s), Mul(b, c))}, 3);
    }
    Var fused = Rotary(x, cos, sin, interleaved);
    EXPECT_EQ(fused.value().ToVector(), composed.value().ToVector()) << "interleaved " << interleaved;
    x.ZeroGrad();
    Backward(Project(composed));
    const std::vector<float> want = x.grad().ToVector();
    x.ZeroGrad();
    Backward(Project(fused));
    EXPECT_EQ(x.grad().ToVector(), want) << "interleaved " << interleaved;
  }
}

TEST_P(OpsTest, BinaryOpsBroadcastLikeNumPy) {
  const std::vector<float> row = {0.5f, -2.0f, 4.0f};  // (3): one value per column
  const std::vector<float> col = {3.0f, -1.0f};        // (2, 1): one value per row
  Var a = V({2, 3}, kA), r = V({3}, row), c = V({2, 1}, col);
  std::vector<double> add, sub, mul, div;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      const double x = kA[i * 3 + j];
      add.push_back(x + row[j]);
      sub.push_back(x - col[i]);
      mul.push_back(x * col[i]);
      div.push_back(x / row[j]);
    }
  ExpectValues(Add(a, r), {2, 3}, add);
  ExpectValues(Sub(a, c), {2, 3}, sub);
  ExpectValues(Mul(a, c), {2, 3}, mul);
  ExpectValues(Div(a, r), {2, 3}, div);
  ExpectValues(Add(c, r), {2, 3}, {3.5, 1, 7, -0.5, -3, 3});  // (2, 1) + (3) -> (2, 3)
  ExpectValues(Scale(a, 3.0f), {2, 3}, Map(kA, [](double x) { return 3 * x; }));
  ExpectValues(AddScalar(a, 1.5f), {2, 3}, Map(kA, [](double x) { return x + 1.5; }));
}

TEST_P(OpsTest, UnaryOpsAreTheirFormulas) {
  Var a = V({2, 3}, kA);
  const double pi = std::acos(-1.0);
  ExpectValues(Relu(a), {2, 3}, Map(kA, [](double x) { return x > 0 ? x : 0; }));
  ExpectValues(Gelu(a, false), {2, 3}, Map(kA, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }));
  ExpectValues(Gelu(a, true), {2, 3}, Map(kA, [pi](double x) {
                 return 0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
               }));
  ExpectValues(Silu(a), {2, 3}, Map(kA, [](double x) { return x / (1 + std::exp(-x)); }));
  ExpectValues(Sigmoid(a), {2, 3}, Map(kA, [](double x) { return 1 / (1 + std::exp(-x)); }));
  ExpectValues(Tanh(a), {2, 3}, Map(kA, [](double x) { return std::tanh(x); }));
  ExpectValues(Exp(a), {2, 3}, Map(kA, [](double x) { return std::exp(x); }));
  ExpectValues(Square(a), {2, 3}, Map(kA, [](double x) { return x * x; }));
  const std::vector<float> positive = {0.25f, 0.5f, 1.0f, 1.5f, 2.0f, 9.0f};
  Var p = V({2, 3}, positive);
  ExpectValues(Log(p), {2, 3}, Map(positive, [](double x) { return std::log(x); }));
  ExpectValues(Sqrt(p), {2, 3}, Map(positive, [](double x) { return std::sqrt(x); }));
}

// Logical A (batch, m, k) and B (batch or 1, k, n) from formulas; stored
// transposed when asked.
float ValueA(int b, int i, int p) { return 0.5f * (b + 1) + i - 0.25f * p; }
float ValueB(int b, int p, int j) { return 0.3f * p - j + b; }
Var Stored(int batch, int rows, int cols, bool transposed, float (*value)(int, int, int), bool batched = true) {
  std::vector<float> v;
  for (int b = 0; b < batch; ++b)
    for (int r = 0; r < (transposed ? cols : rows); ++r)
      for (int c = 0; c < (transposed ? rows : cols); ++c) v.push_back(transposed ? value(b, c, r) : value(b, r, c));
  return batched ? V({batch, transposed ? cols : rows, transposed ? rows : cols}, v)
                 : V({transposed ? cols : rows, transposed ? rows : cols}, v);
}

TEST_P(OpsTest, MatMulIsTheSumOfProductsForEveryTransposeAndSharedB) {
  const int batch = 2, m = 2, k = 3, n = 4;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool shared : {false, true}) {
        Var a = Stored(batch, m, k, ta, ValueA);
        Var b = Stored(shared ? 1 : batch, k, n, tb, ValueB, /*batched=*/!shared);
        std::vector<double> want;
        for (int bi = 0; bi < batch; ++bi)
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
              double sum = 0;
              for (int p = 0; p < k; ++p) sum += double{ValueA(bi, i, p)} * ValueB(shared ? 0 : bi, p, j);
              want.push_back(sum);
            }
        SCOPED_TRACE(testing::Message() << "trans_a " << ta << " trans_b " << tb << " shared " << shared);
        ExpectValues(MatMul(a, b, ta, tb), {batch, m, n}, want);
      }
}

TEST_P(OpsTest, LinearIsXTimesWTransposedPlusBias) {
  const std::vector<float> x = {1, -2, 0.5f, 3, 0, -1};                             // (2, 3)
  const std::vector<float> w = {0.5f, 1, -1, 2, 0, 0.25f, -0.5f, 1.5f, 1, 0, 0, 3};  // (4, 3)
  const std::vector<float> bias = {0.1f, -0.2f, 0.3f, -0.4f};                       // (4)
  std::vector<double> with_bias, without;
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 4; ++o) {
      double dot = 0;
      for (int i = 0; i < 3; ++i) dot += double{x[r * 3 + i]} * w[o * 3 + i];
      without.push_back(dot);
      with_bias.push_back(dot + bias[o]);
    }
  ExpectValues(Linear(V({2, 3}, x), V({4, 3}, w), V({4}, bias)), {2, 4}, with_bias);
  ExpectValues(Linear(V({2, 3}, x), V({4, 3}, w), Var()), {2, 4}, without);
}

TEST_P(OpsTest, SoftmaxNormalizesRowsAndZeroesAllMaskedOnes) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1, 2, 3, -1, 0, -inf, -inf, -inf, -inf};  // (3, 3)
  std::vector<double> want;
  for (int r = 0; r < 3; ++r) {
    double max = -inf, sum = 0;
    for (int c = 0; c < 3; ++c) max = std::max<double>(max, x[r * 3 + c]);
    for (int c = 0; c < 3; ++c) sum += std::isinf(max) ? 0 : std::exp(x[r * 3 + c] - max);
    for (int c = 0; c < 3; ++c) want.push_back(sum > 0 ? std::exp(x[r * 3 + c] - max) / sum : 0);
  }
  EXPECT_EQ(want[6] + want[7] + want[8], 0);
  ExpectValues(Softmax(V({3, 3}, x)), {3, 3}, want);
}

TEST_P(OpsTest, NormalizeIsLayerNormOrRmsNorm) {
  const std::vector<float> x = {1, 2, 4, 9, -3, 0, 3, 0.5f};  // (2, 4)
  const std::vector<float> gamma = {1, 0.5f, 2, -1}, beta = {0, 0.25f, -1, 1};
  const double eps = 1e-5;
  for (bool subtract_mean : {true, false}) {
    std::vector<double> affine, plain;
    for (int r = 0; r < 2; ++r) {
      double mean = 0, var = 0;
      if (subtract_mean)
        for (int c = 0; c < 4; ++c) mean += x[r * 4 + c] / 4.0;
      for (int c = 0; c < 4; ++c) var += (x[r * 4 + c] - mean) * (x[r * 4 + c] - mean) / 4.0;
      for (int c = 0; c < 4; ++c) {
        const double normalized = (x[r * 4 + c] - mean) / std::sqrt(var + eps);
        plain.push_back(normalized);
        affine.push_back(normalized * gamma[c] + beta[c]);
      }
    }
    SCOPED_TRACE(subtract_mean ? "LayerNorm" : "RMSNorm");
    ExpectValues(Normalize(V({2, 4}, x), V({4}, gamma), V({4}, beta), eps, subtract_mean), {2, 4}, affine);
    ExpectValues(Normalize(V({2, 4}, x), Var(), Var(), eps, subtract_mean), {2, 4}, plain);
  }
}

// x[i] = i for a tensor of `shape`.
Var Iota(const Shape& shape) {
  std::vector<float> v(NumElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return V(shape, v);
}

TEST_P(OpsTest, ShapeOpsMoveElementsByTheirIndexRules) {
  Var x = Iota({2, 3, 4});  // x[i][j][l] = 12 i + 4 j + l
  ExpectValues(Reshape(x, {4, -1}), {4, 6}, Map(x.value().ToVector(), [](double v) { return v; }));
  std::vector<double> permuted;  // y[l][i][j] = x[i][j][l]
  for (int l = 0; l < 4; ++l)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) permuted.push_back(12 * i + 4 * j + l);
  ExpectValues(Permute(x, {2, 0, 1}), {4, 2, 3}, permuted);
  std::vector<double> sliced;  // x[:, 1:3, :]
  for (int i = 0; i < 2; ++i)
    for (int j = 1; j < 3; ++j)
      for (int l = 0; l < 4; ++l) sliced.push_back(12 * i + 4 * j + l);
  ExpectValues(Slice(x, 1, 1, 2), {2, 2, 4}, sliced);
  std::vector<double> joined;  // [x, 100 + x[..., :2]] along the last dim
  Var tail = AddScalar(Slice(x, 2, 0, 2), 100.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      for (int l = 0; l < 4; ++l) joined.push_back(12 * i + 4 * j + l);
      for (int l = 0; l < 2; ++l) joined.push_back(100 + 12 * i + 4 * j + l);
    }
  ExpectValues(Concat({x, tail}, -1), {2, 3, 6}, joined);
  Var heads = Iota({1, 2, 2, 3});  // (B, G, S, hs)
  std::vector<double> repeated;    // head g repeated 3 times consecutively
  for (int g = 0; g < 2; ++g)
    for (int copy = 0; copy < 3; ++copy)
      for (int e = 0; e < 6; ++e) repeated.push_back(6 * g + e);
  ExpectValues(RepeatHeads(heads, 3), {1, 6, 2, 3}, repeated);
}

TEST_P(OpsTest, SumMeanGatherAndEmbedding) {
  Var a = V({2, 3}, kA);
  double total = 0;
  for (float v : kA) total += v;
  ExpectValues(Sum(a), {}, {total});
  ExpectValues(Mean(a), {}, {total / 6});
  Var table = Iota({5, 3});  // row r = (3r, 3r + 1, 3r + 2)
  const std::vector<int32_t> ids = {4, 0, 4, 2};
  std::vector<double> looked_up;
  for (int32_t id : ids)
    for (int c = 0; c < 3; ++c) looked_up.push_back(3 * id + c);
  ExpectValues(Embedding(table, ids), {4, 3}, looked_up);
  std::vector<double> gathered;
  for (int64_t r : {3, 1, 1})
    for (int c = 0; c < 3; ++c) gathered.push_back(3 * r + c);
  ExpectValues(Var(GatherRows(table.value(), {3, 1, 1})), {3, 3}, gathered);
}

TEST_P(OpsTest, CrossEntropyIsTheMeanNegativeLogLikelihoodWithSmoothing) {
  const std::vector<float> logits = {2, 1, 0, -1, 0.5f, 0.5f, 3, 0, -2, 1, 1, 1};  // (3, 4)
  const std::vector<int32_t> targets = {0, -100, 2};                               // row 1 ignored
  for (double smoothing : {0.0, 0.1}) {
    double sum = 0;
    int counted = 0;
    for (int r = 0; r < 3; ++r) {
      if (targets[r] == -100) continue;
      double z = 0;
      for (int c = 0; c < 4; ++c) z += std::exp(logits[r * 4 + c]);
      double uniform = 0;  // mean over classes of -log p
      for (int c = 0; c < 4; ++c) uniform += (std::log(z) - logits[r * 4 + c]) / 4;
      sum += (1 - smoothing) * (std::log(z) - logits[r * 4 + targets[r]]) + smoothing * uniform;
      ++counted;
    }
    SCOPED_TRACE(smoothing);
    ExpectValues(CrossEntropy(V({3, 4}, logits), targets, -100, static_cast<float>(smoothing)), {}, {sum / counted});
  }
}

TEST_P(OpsTest, DropoutZeroesOrScalesEachElement) {
  std::vector<float> x(4000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i % 7);
  const float p = 0.25f;
  const std::vector<float> y = Dropout(V({4000}, x), p, RngStream(3, RngPurpose::kDropout, 5)).value().ToVector();
  int kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(y[i] == 0.0f || std::abs(y[i] - x[i] / (1 - p)) < 1e-5) << "element " << i << ": " << y[i];
    kept += y[i] != 0.0f;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 4000);
  ExpectValues(Dropout(V({3}, {1, 2, 3}), 0.0f, RngStream(3, RngPurpose::kDropout, 5)), {3}, {1, 2, 3});
}

// softmax(scale q.k - slope |i - j|, causal) @ v, per head, with two query
// heads sharing one key/value head. (The fused kernel is optional, but every
// registered backend implements it; one that did not would stop here naming
// the kernel.)
TEST_P(OpsTest, FusedAttentionIsSoftmaxOfScaledDotProductsTimesValues) {
  FusedAttentionDesc d;
  d.batch = 1, d.heads = 2, d.kv_heads = 1, d.queries = 3, d.keys = 3, d.head_dim = 2, d.value_dim = 2;
  d.scale = 0.7f;
  d.mask.causal = true;
  d.alibi_slopes = {0.5, 0.25};
  const std::vector<float> q = {1, 0, 0.5f, -1, 2, 1, -1, 1, 0, 2, 1, 1};  // (1, 2, 3, 2)
  const std::vector<float> k = {1, 1, -1, 0, 0.5f, 2};                     // (1, 1, 3, 2)
  const std::vector<float> v = {1, 2, 3, -1, 0, 4};                        // (1, 1, 3, 2)
  std::vector<double> want;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i) {
      std::vector<double> logit;
      for (int j = 0; j <= i; ++j)  // causal: keys up to the query's position
        logit.push_back(d.scale * (q[(h * 3 + i) * 2] * k[j * 2] + q[(h * 3 + i) * 2 + 1] * k[j * 2 + 1]) -
                        d.alibi_slopes[h] * std::abs(i - j));
      double max = logit[0], sum = 0;
      for (double l : logit) max = std::max(max, l);
      for (double l : logit) sum += std::exp(l - max);
      for (int e = 0; e < 2; ++e) {
        double out = 0;
        for (int j = 0; j <= i; ++j) out += std::exp(logit[j] - max) / sum * v[j * 2 + e];
        want.push_back(out);
      }
    }
  ExpectValues(FusedAttention(V({1, 2, 3, 2}, q), V({1, 1, 3, 2}, k), V({1, 1, 3, 2}, v), d), {1, 2, 3, 2}, want);
}

INSTANTIATE_TEST_SUITE_P(AllBackends, OpsTest, ::testing::ValuesIn(RegisteredBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
