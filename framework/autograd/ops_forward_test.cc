// Every op's forward value on small inputs, on every registered backend,
// against its definition written out here from the math (loops and <cmath>
// in double precision, never a tvlab kernel). ops_test.cc checks the
// gradients.

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

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

class OpsForward : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(GetParam());
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda on a machine without a GPU
    scoped_ = std::make_unique<ScopedBackend>(GetParam());
    if (!MissingKernels(CurrentBackend()).empty()) GTEST_SKIP() << GetParam() << " does not implement every kernel yet";
  }
  std::unique_ptr<ScopedBackend> scoped_;
};

// (2, 3) values with both signs and a zero.
const std::vector<float> kA = {-1.5f, -0.25f, 0.0f, 0.5f, 1.0f, 2.0f};

TEST_P(OpsForward, BinaryOpsBroadcastLikeNumPy) {
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

TEST_P(OpsForward, UnaryOpsAreTheirFormulas) {
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

TEST_P(OpsForward, MatMulIsTheSumOfProductsForEveryTransposeAndSharedB) {
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

TEST_P(OpsForward, LinearIsXTimesWTransposedPlusBias) {
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

TEST_P(OpsForward, SoftmaxNormalizesRowsAndZeroesAllMaskedOnes) {
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

TEST_P(OpsForward, NormalizeIsLayerNormOrRmsNorm) {
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

TEST_P(OpsForward, ShapeOpsMoveElementsByTheirIndexRules) {
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

TEST_P(OpsForward, SumMeanGatherAndEmbedding) {
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

TEST_P(OpsForward, CrossEntropyIsTheMeanNegativeLogLikelihoodWithSmoothing) {
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

TEST_P(OpsForward, DropoutZeroesOrScalesEachElement) {
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
// heads sharing one key/value head.
TEST_P(OpsForward, FusedAttentionIsSoftmaxOfScaledDotProductsTimesValues) {
  if (!CurrentBackend().Implements(Kernel::kFusedAttention)) GTEST_SKIP() << "no fused attention kernel";
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

INSTANTIATE_TEST_SUITE_P(AllBackends, OpsForward, ::testing::ValuesIn(RegisteredBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
