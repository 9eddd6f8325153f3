// The reference backend against written definitions: values computed by
// hand, or by a formula written here in double independently of its loops
// (a backward against central differences of its forward). Every other
// backend is compared with the reference (backend_conformance_test.cc), so
// this is where the oracle itself is checked. Attention's kernels:
// reference_attention_test.cc.

#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/reference/reference_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ReferenceGemm, TransposesAlphaBetaAndABroadcastOperand) {
  ReferenceBackend ref;
  // A = [[1, 2], [3, 4]] stored transposed; B = [[5, 6], [7, 8]] shared by
  // both batch entries (stride 0); C = 0.5 A B + 2 C.
  const std::vector<float> a_t = {1, 3, 2, 4, /*batch 1: 2A*/ 2, 6, 4, 8};
  const std::vector<float> b = {5, 6, 7, 8};
  std::vector<float> c = {1, 1, 1, 1, 0, 0, 0, 0};
  GemmDesc d;
  d.batch = 2, d.m = 2, d.n = 2, d.k = 2, d.trans_a = true;
  d.stride_a = 4, d.stride_b = 0, d.stride_c = 4, d.alpha = 0.5f, d.beta = 2.0f;
  ref.Gemm(d, a_t.data(), b.data(), c.data());
  // A B = [[19, 22], [43, 50]].
  EXPECT_EQ(c, (std::vector<float>{11.5f, 13, 23.5f, 27, 19, 22, 43, 50}));
}

// 1 + 2^-12 is a float32 but rounds to 1 in bf16 (7 stored bits) and TF32
// (10): four such products sum to 4 + 2^-10 in fp32 and to 4 in those.
TEST(ReferenceGemm, Bf16AndTf32RoundTheOperands) {
  ReferenceBackend ref;
  const std::vector<float> a(4, 1.0f + std::ldexp(1.0f, -12)), b(4, 1.0f);
  for (Precision p : AllPrecisions()) {
    GemmDesc d;
    d.m = 1, d.n = 1, d.k = 4, d.precision = p;
    float c = 7.0f;
    ref.Gemm(d, a.data(), b.data(), &c);
    EXPECT_EQ(c, p == Precision::kFp32 ? 4.0f + std::ldexp(1.0f, -10) : 4.0f) << PrecisionName(p);
  }
}

TEST(ReferenceGemm, GemmBiasAddsTheBiasToEveryRow) {
  ReferenceBackend ref;
  const std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 0, 1}, bias = {10, 20};
  std::vector<float> c(4, 7.0f);
  GemmDesc d;
  d.m = 2, d.n = 2, d.k = 2;
  ref.GemmBias(d, a.data(), b.data(), bias.data(), c.data());
  EXPECT_EQ(c, (std::vector<float>{11, 22, 13, 24}));
}

// Each op's definition in double, and its derivative by central differences.
double Definition(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::kRelu: return x > 0 ? x : 0;
    case UnaryOp::kGeluErf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::kSilu: return x / (1 + std::exp(-x));
    case UnaryOp::kSigmoid: return 1 / (1 + std::exp(-x));
    case UnaryOp::kTanh: return std::tanh(x);
    case UnaryOp::kExp: return std::exp(x);
    case UnaryOp::kLog: return std::log(x);
    case UnaryOp::kSqrt: return std::sqrt(x);
    case UnaryOp::kSquare: return x * x;
  }
  return 0;
}

TEST(ReferenceUnary, EveryOpAndItsDerivative) {
  ReferenceBackend ref;
  const std::vector<float> x = {0.3f, 0.7f, 1.9f, 2.5f};  // positive: log and sqrt
  const std::vector<float> signed_x = {-1.5f, -0.4f, 0.6f, 2.2f};
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kGeluErf, UnaryOp::kGeluTanh, UnaryOp::kSilu,
                     UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kExp, UnaryOp::kLog,
                     UnaryOp::kSqrt, UnaryOp::kSquare}) {
    const std::vector<float>& in = op == UnaryOp::kLog || op == UnaryOp::kSqrt ? x : signed_x;
    std::vector<float> y(4), dx(4);
    const std::vector<float> dy = {1.0f, -2.0f, 0.5f, 3.0f};
    ref.Unary(op, in.data(), y.data(), 4);
    ref.UnaryBackward(op, in.data(), y.data(), dy.data(), dx.data(), 4);
    for (int i = 0; i < 4; ++i) {
      const double want = Definition(op, in[i]);
      EXPECT_NEAR(y[i], want, 2e-6 * (1 + std::fabs(want))) << static_cast<int>(op) << " " << i;
      const double h = 1e-4;
      const double slope = (Definition(op, in[i] + h) - Definition(op, in[i] - h)) / (2 * h);
      EXPECT_NEAR(dx[i], dy[i] * slope, 1e-4 * (1 + std::fabs(dy[i] * slope)))
          << static_cast<int>(op) << " " << i;
    }
  }
}

TEST(ReferenceBinary, BroadcastingAndItsBackward) {
  ReferenceBackend ref;
  const std::vector<float> m = {1, 2, 3, 4, 5, 6};  // (2, 3)
  const std::vector<float> row = {10, 20, 30}, col = {2, 3};
  std::vector<float> out(6);
  ref.Binary(BinaryOp::kAdd, m.data(), {2, 3}, row.data(), {3}, out.data(), {2, 3});
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  ref.Binary(BinaryOp::kMul, col.data(), {2, 1}, row.data(), {1, 3}, out.data(), {2, 3});
  EXPECT_EQ(out, (std::vector<float>{20, 40, 60, 30, 60, 90}));
  ref.Binary(BinaryOp::kSub, m.data(), {2, 3}, col.data(), {2, 1}, out.data(), {2, 3});
  EXPECT_EQ(out, (std::vector<float>{-1, 0, 1, 1, 2, 3}));
  ref.Binary(BinaryOp::kDiv, m.data(), {2, 3}, col.data(), {}, out.data(), {2, 3});  // scalar 2
  EXPECT_EQ(out, (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  std::vector<float> columns(3), rows(2);
  ref.ReduceSumTo(m.data(), {2, 3}, columns.data(), {3});
  EXPECT_EQ(columns, (std::vector<float>{5, 7, 9}));
  ref.ReduceSumTo(m.data(), {2, 3}, rows.data(), {2, 1});
  EXPECT_EQ(rows, (std::vector<float>{6, 15}));
}

TEST(ReferenceSoftmax, ValuesAMaskedRowAndTheBackward) {
  ReferenceBackend ref;
  const std::vector<float> x = {0, std::log(2.0f), std::log(3.0f), -kInf, -kInf, -kInf};
  std::vector<float> y(6);
  ref.Softmax(x.data(), y.data(), 2, 3);
  EXPECT_NEAR(y[0], 1.0 / 6, 1e-7);
  EXPECT_NEAR(y[1], 2.0 / 6, 1e-7);
  EXPECT_NEAR(y[2], 3.0 / 6, 1e-7);
  EXPECT_EQ(std::vector<float>(y.begin() + 3, y.end()), std::vector<float>(3, 0.0f));
  // dx = y (dy - y . dy): y . dy = (1 + 4 + 9) / 6 for dy = (1, 2, 3).
  const std::vector<float> dy = {1, 2, 3, 1, 2, 3};
  std::vector<float> dx(6);
  ref.SoftmaxBackward(y.data(), dy.data(), dx.data(), 2, 3);
  const double dot = 14.0 / 6;
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(dx[c], (c + 1) / 6.0 * (c + 1 - dot), 1e-6);
  for (int c = 3; c < 6; ++c) EXPECT_EQ(dx[c], 0.0f);
}

TEST(ReferenceNormalize, LayerNormAndRmsNormValues) {
  ReferenceBackend ref;
  const std::vector<float> x = {1, 2, 3, 4}, gamma = {1, 2, 1, 2}, beta = {0, 0, 1, 1};
  std::vector<float> y(4), mean(1), rstd(1);
  const float eps = 1e-5f;
  ref.Normalize(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), 1, 4,
                eps, /*subtract_mean=*/true);
  const double rs = 1 / std::sqrt(1.25 + eps);  // variance of 1..4 is 1.25
  EXPECT_FLOAT_EQ(mean[0], 2.5f);
  EXPECT_NEAR(rstd[0], rs, 1e-6);
  const std::vector<double> layer = {-1.5 * rs, -0.5 * rs * 2, 0.5 * rs + 1, 1.5 * rs * 2 + 1};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], layer[i], 1e-6) << i;
  ref.Normalize(x.data(), nullptr, nullptr, y.data(), mean.data(), rstd.data(), 1, 4, eps,
                /*subtract_mean=*/false);
  const double rms = 1 / std::sqrt(7.5 + eps);  // mean of 1, 4, 9, 16
  EXPECT_EQ(mean[0], 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], x[i] * rms, 1e-6) << i;
}

// d/dx, d/dgamma, d/dbeta of L = sum(dy * y) by central differences of the
// forward, for LayerNorm and RMSNorm; dgamma and dbeta accumulate.
TEST(ReferenceNormalize, BackwardIsTheForwardsDerivative) {
  ReferenceBackend ref;
  const int64_t rows = 2, cols = 5;
  std::vector<float> x = {0.3f, -1.2f, 2.0f, 0.7f, -0.4f, 1.1f, 0.2f, -0.9f, 1.6f, 0.5f};
  std::vector<float> gamma = {1.5f, -0.5f, 0.8f, 1.2f, 0.9f}, beta = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  const std::vector<float> dy = {1, -2, 0.5f, 3, -1, 0.25f, 2, -0.5f, 1, 1.5f};
  for (bool subtract_mean : {true, false}) {
    auto loss = [&]() {
      std::vector<float> y(rows * cols), mean(rows), rstd(rows);
      ref.Normalize(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows,
                    cols, 1e-5f, subtract_mean);
      double l = 0;
      for (int64_t i = 0; i < rows * cols; ++i) l += static_cast<double>(dy[i]) * y[i];
      return l;
    };
    auto slope = [&](float* v) {
      const float keep = *v, h = 1e-2f;
      *v = keep + h;
      const double up = loss();
      *v = keep - h;
      const double down = loss();
      *v = keep;
      return (up - down) / (2 * h);
    };
    std::vector<float> y(rows * cols), mean(rows), rstd(rows), dx(rows * cols);
    std::vector<float> dgamma(cols, 1.0f), dbeta(cols, 1.0f);  // accumulated onto 1
    ref.Normalize(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows,
                  cols, 1e-5f, subtract_mean);
    ref.NormalizeBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), dx.data(),
                          dgamma.data(), dbeta.data(), rows, cols, subtract_mean);
    for (int64_t i = 0; i < rows * cols; ++i) EXPECT_NEAR(dx[i], slope(&x[i]), 2e-3) << i;
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_NEAR(dgamma[c] - 1.0f, slope(&gamma[c]), 2e-3) << c;
      EXPECT_NEAR(dbeta[c] - 1.0f, slope(&beta[c]), 2e-3) << c;
    }
  }
}

TEST(ReferenceIndexing, PermuteCopy2DGatherAndScatterAdd) {
  ReferenceBackend ref;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // (2, 3)
  std::vector<float> y(6);
  ref.Permute(x.data(), {2, 3}, {1, 0}, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  std::vector<float> dst(8, -1.0f);  // (2, 4): columns 1..2 from x's columns 0..1
  ref.Copy2D(x.data(), 3, dst.data() + 1, 4, 2, 2);
  EXPECT_EQ(dst, (std::vector<float>{-1, 1, 2, -1, -1, 4, 5, -1}));
  const std::vector<int32_t> ids = {2, 0, 2};
  std::vector<float> rows(6);  // table (3, 2) = x viewed as (3, 2)
  ref.Gather(x.data(), 2, ids.data(), 3, rows.data());
  EXPECT_EQ(rows, (std::vector<float>{5, 6, 1, 2, 5, 6}));
  std::vector<float> table(6, 0.5f);
  ref.ScatterAdd(rows.data(), 2, ids.data(), 3, table.data());  // row 2 twice
  EXPECT_EQ(table, (std::vector<float>{1.5f, 2.5f, 0.5f, 0.5f, 10.5f, 12.5f}));
}

TEST(ReferenceCrossEntropy, LossesMeanAndBackward) {
  ReferenceBackend ref;
  // Row 0: logits (0, 0, 0, log 5): softmax (1, 1, 1, 5) / 8, target 3.
  // Row 1: ignored. Row 2: (0, 0, 0, 0), target 1.
  const std::vector<float> logits = {0, 0, 0, std::log(5.0f), 9, 9, 9, 9, 0, 0, 0, 0};
  const std::vector<int32_t> targets = {3, -100, 1};
  for (float smoothing : {0.0f, 0.2f}) {
    std::vector<float> loss(3), probs(12), mean(1), dlogits(12);
    ref.CrossEntropy(logits.data(), targets.data(), 3, 4, -100, smoothing, loss.data(),
                     probs.data(), mean.data());
    // Smoothed: (1 - s) (-log p_target) + s * mean over classes of -log p_c.
    const double l0 = (1 - smoothing) * std::log(8.0 / 5) +
                      smoothing * (3 * std::log(8.0) + std::log(8.0 / 5)) / 4;
    const double l2 = std::log(4.0);
    EXPECT_NEAR(loss[0], l0, 1e-6);
    EXPECT_EQ(loss[1], 0.0f);
    EXPECT_NEAR(loss[2], l2, 1e-6);
    EXPECT_NEAR(mean[0], (l0 + l2) / 2, 1e-6);  // over the two counted rows
    EXPECT_NEAR(probs[3], 5.0 / 8, 1e-7);
    const std::vector<float> dloss = {0.5f};
    ref.CrossEntropyBackward(probs.data(), targets.data(), 3, 4, -100, smoothing, dloss.data(),
                             dlogits.data());
    // dloss / counted * (p - ((1 - s) one_hot + s / 4)).
    for (int c = 0; c < 4; ++c) {
      const double target = smoothing / 4 + (c == 3 ? 1 - smoothing : 0);
      EXPECT_NEAR(dlogits[c], 0.25 * (probs[c] - target), 1e-7) << c;
      EXPECT_EQ(dlogits[4 + c], 0.0f);
    }
  }
}

TEST(ReferenceRows, ArgMaxTakesTheFirstOfEqualMaxima) {
  ReferenceBackend ref;
  const std::vector<float> x = {1, 3, 3, 0, -1, -2, -1, -5, 7};
  std::vector<int32_t> best(3);
  ref.ArgMaxRows(x.data(), 3, 3, best.data());
  EXPECT_EQ(best, (std::vector<int32_t>{1, 0, 2}));
}

TEST(ReferenceTraining, DropoutMaskIsThePhiloxDefinition) {
  ReferenceBackend ref;
  const RngStream stream(77, RngPurpose::kDropout, 5);
  const int64_t n = 1001;  // odd: the last word's high half is unused
  std::vector<float> mask(n, -1.0f);
  ref.DropoutMask(stream, 0.25f, mask.data(), n);
  std::vector<uint32_t> words((n + 1) / 2);
  stream.Words(0, words.size(), words.data());
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t half = (words[i / 2] >> ((i % 2) * 16)) & 0xFFFFu;
    ASSERT_EQ(mask[i], half < 16384u ? 0.0f : 1.0f / 0.75f) << i;
  }
}

TEST(ReferenceTraining, SumSquaresAccumulatesInDouble) {
  ReferenceBackend ref;
  const std::vector<float> x = {1, -2, 3, 0.5f};
  double acc = 0.75;
  ref.SumSquares(x.data(), 4, &acc);
  EXPECT_EQ(acc, 0.75 + 1 + 4 + 9 + 0.25);
}

// torch.optim.SGD's update (momentum, Nesterov, L2 weight decay) and Lion's
// (Chen et al. 2023, Algorithm 2) written out in double; three steps.
TEST(ReferenceTraining, SgdManyAndLionManyAreTheirPapersUpdates) {
  ReferenceBackend ref;
  const std::vector<float> g = {0.5f, -1.0f, 2.0f};
  const float lr = 0.1f, momentum = 0.9f, wd = 0.05f, b1 = 0.9f, b2 = 0.99f;
  for (bool nesterov : {false, true}) {
    std::vector<float> p = {1.0f, -2.0f, 0.25f}, buf(3, 0.0f);
    std::vector<double> pd(p.begin(), p.end()), bd(3, 0);
    for (int step = 1; step <= 3; ++step) {
      ref.SgdMany({{p.data(), g.data(), buf.data(), nullptr, 3, wd}}, {lr, momentum, nesterov});
      for (int i = 0; i < 3; ++i) {
        const double d = g[i] + static_cast<double>(wd) * pd[i];
        bd[i] = step == 1 ? d : momentum * bd[i] + d;  // torch: buf = clone(d_p) at the first step
        pd[i] -= lr * (nesterov ? d + momentum * bd[i] : bd[i]);
      }
    }
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], pd[i], 1e-6) << "sgd nesterov " << nesterov << " " << i;
  }
  std::vector<float> p = {1.0f, -2.0f, 0.25f}, m(3, 0.0f);
  std::vector<double> pd(p.begin(), p.end()), md(3, 0);
  for (int step = 1; step <= 3; ++step) {
    ref.LionMany({{p.data(), g.data(), m.data(), nullptr, 3, wd}}, {lr, b1, b2});
    for (int i = 0; i < 3; ++i) {
      const double c = b1 * md[i] + (1 - static_cast<double>(b1)) * g[i];
      pd[i] -= lr * ((c > 0) - (c < 0) + static_cast<double>(wd) * pd[i]);
      md[i] = b2 * md[i] + (1 - static_cast<double>(b2)) * g[i];
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], pd[i], 1e-6) << "lion " << i;
}

// torch.optim.AdamW's update written out in double: decay, moments, bias
// corrections, step; two steps.
TEST(ReferenceTraining, AdamWIsTorchsUpdateAndAdamWManyEqualsItPerTensor) {
  ReferenceBackend ref;
  const std::vector<float> g = {0.5f, -1.0f, 2.0f};
  std::vector<float> p = {1.0f, -2.0f, 0.25f}, m(3, 0.0f), v(3, 0.0f);
  std::vector<double> pd(p.begin(), p.end()), md(3, 0), vd(3, 0);
  const float lr = 0.1f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 0.05f;
  for (int64_t step = 1; step <= 2; ++step) {
    ref.AdamW(p.data(), g.data(), m.data(), v.data(), 3, {lr, b1, b2, eps, wd, step});
    for (int i = 0; i < 3; ++i) {
      pd[i] *= 1 - static_cast<double>(lr) * wd;
      md[i] = b1 * md[i] + (1 - static_cast<double>(b1)) * g[i];
      vd[i] = b2 * vd[i] + (1 - static_cast<double>(b2)) * g[i] * g[i];
      const double m_hat = md[i] / (1 - std::pow(static_cast<double>(b1), step));
      const double v_hat = vd[i] / (1 - std::pow(static_cast<double>(b2), step));
      pd[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], pd[i], 1e-6) << i;
  // AdamWMany: each tensor's own decay replaces h.weight_decay.
  std::vector<float> p1 = {1.0f, -2.0f, 0.25f}, m1(3, 0.0f), v1(3, 0.0f);
  std::vector<float> p2 = {1.0f, -2.0f, 0.25f}, m2(3, 0.0f), v2(3, 0.0f);
  const AdamWHyper h{lr, b1, b2, eps, /*weight_decay (ignored)=*/0.5f, 1};
  ref.AdamWMany({{p1.data(), g.data(), m1.data(), v1.data(), 3, wd}}, h);
  ref.AdamW(p2.data(), g.data(), m2.data(), v2.data(), 3, {lr, b1, b2, eps, wd, 1});
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(v1, v2);
}

}  // namespace
}  // namespace tvlab
