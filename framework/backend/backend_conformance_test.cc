// Every kernel of every registered backend other than the reference, against
// the reference backend, on random inputs of awkward sizes. A new backend is
// covered by registering it. The tested backend's operands live on its
// device (Dev, DevInts: explicit copies), the reference's on the host; a
// kernel a backend does not implement (its descriptor says so) is skipped,
// saying so (validation refuses such a backend for training). The reference
// itself is checked against written definitions in
// reference/reference_backend_test.cc. Fused attention has its own file
// (fused_attention_conformance_test.cc).

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/backend_conformance_util.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using conformance::BackendsToCompare;
using conformance::Dev;
using conformance::ExpectClose;
using conformance::Random;

class BackendConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(GetParam());
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda on a machine without a GPU
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    described_ = *FindBackend(GetParam());
    ref_ = std::move(*MakeBackend("reference"));
  }
  // Skips the test unless the backend implements every kernel in `kernels`.
  bool Lacks(std::initializer_list<Kernel> kernels) {
    for (Kernel k : kernels)
      if (!described_->Implements(k)) return true;
    return false;
  }
  Dev D(const std::vector<float>& v) const { return Dev(be_->device(), v); }
  DeviceInts I(const std::vector<int32_t>& v) const { return DeviceInts::Upload(v, be_->device()); }
  std::unique_ptr<Backend> be_, ref_;
  const BackendDescriptor* described_ = nullptr;
};

#define TVLAB_NEED(...)                                                                   \
  if (Lacks({__VA_ARGS__})) GTEST_SKIP() << GetParam() << " does not implement " #__VA_ARGS__

TEST_P(BackendConformance, GemmAllTransposesBatchesAndBroadcast) {
  TVLAB_NEED(Kernel::kGemm);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool broadcast_b : {false, true}) {
        GemmDesc d;
        d.batch = 3, d.m = 5, d.n = 7, d.k = 4, d.trans_a = ta, d.trans_b = tb;
        d.stride_a = d.m * d.k, d.stride_b = broadcast_b ? 0 : d.k * d.n, d.stride_c = d.m * d.n;
        d.alpha = 0.5f, d.beta = broadcast_b ? 1.0f : 0.0f;
        auto a = Random(d.batch * d.m * d.k, 1), b = Random(d.batch * d.k * d.n, 2);
        auto c0 = Random(d.batch * d.m * d.n, 3);
        auto c_ref = c0;
        Dev c_be = D(c0);
        be_->Gemm(d, D(a).p(), D(b).p(), c_be.p());
        ref_->Gemm(d, a.data(), b.data(), c_ref.data());
        ExpectClose(c_be.host(), c_ref, 1e-5f, "gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      }
    }
  }
}

// Linear's GEMM with its bias as the epilogue: op(A) op(B) + bias on every
// row, against the reference GEMM with the bias added here.
TEST_P(BackendConformance, GemmBiasAddsTheBiasToEveryRow) {
  TVLAB_NEED(Kernel::kGemm, Kernel::kBinary);
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    if (!described_->Supports(precision)) continue;  // bf16: where the CPU or GPU has it
    for (bool shared_b : {true, false}) {
      for (bool tb : {true, false}) {
        GemmDesc d;
        d.batch = 2, d.m = 6, d.n = 9, d.k = 5, d.trans_b = tb, d.precision = precision;
        d.stride_a = d.m * d.k, d.stride_b = shared_b ? 0 : d.k * d.n, d.stride_c = d.m * d.n;
        auto a = Random(d.batch * d.m * d.k, 11), b = Random(d.batch * d.k * d.n, 12);
        auto bias = Random(d.n, 13, 1.0f, 2.0f);  // away from 0: a dropped bias shows
        std::vector<float> c_ref(d.batch * d.m * d.n);
        ref_->Gemm(d, a.data(), b.data(), c_ref.data());
        for (size_t i = 0; i < c_ref.size(); ++i) c_ref[i] += bias[i % d.n];
        Dev c_be = D(std::vector<float>(c_ref.size(), 7.0f));  // stale values must be overwritten
        be_->GemmBias(d, D(a).p(), D(b).p(), D(bias).p(), c_be.p());
        ExpectClose(c_be.host(), c_ref, 1e-5f,
                    std::string("gemm+bias ") + PrecisionName(precision) +
                        " shared_b=" + std::to_string(shared_b) + " tb=" + std::to_string(tb));
      }
    }
  }
}

// A Linear's weight and bias gradients in one call: c = a^T b and a's
// columns summed over its rows, against the reference GEMM and sums in
// double; and bit for bit what the backend's own Gemm and ReduceSumTo give
// (the composition it may fuse). Sizes past cpu_onednn's row blocks (8)
// and term panels (64).
TEST_P(BackendConformance, GemmAndColumnSumsIsGemmAndReduceSumTo) {
  TVLAB_NEED(Kernel::kGemm, Kernel::kReduceSumTo, Kernel::kGemmAndColumnSums);
  for (const auto& [m, n, k] : {std::tuple{9, 16, 130}, std::tuple{64, 64, 512}, std::tuple{3, 5, 7}}) {
    GemmDesc d;
    d.m = m, d.n = n, d.k = k, d.trans_a = true;
    const auto a = Random(k * m, 21), b = Random(k * n, 22);
    std::vector<float> c_ref(m * n), sums_ref(m, 0.0f);
    ref_->Gemm(d, a.data(), b.data(), c_ref.data());
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) sum += a[p * m + i];
      sums_ref[i] = static_cast<float>(sum);
    }
    Dev da = D(a), db = D(b), c = D(std::vector<float>(m * n, 7.0f)), sums = D(std::vector<float>(m, 7.0f));
    be_->GemmAndColumnSums(d, da.p(), db.p(), c.p(), sums.p());
    const std::string at = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
    const float tol = 2e-5f * (1 + k / 64);  // float sums of k terms against double ones
    ExpectClose(c.host(), c_ref, tol, "gemm " + at);
    ExpectClose(sums.host(), sums_ref, tol, "column sums " + at);
    Dev c_parts = D(std::vector<float>(m * n)), sums_parts = D(std::vector<float>(m));
    be_->Gemm(d, da.p(), db.p(), c_parts.p());
    be_->ReduceSumTo(da.p(), {k, m}, sums_parts.p(), {m});
    EXPECT_EQ(c.host(), c_parts.host()) << "the product differs from the backend's Gemm, " << at;
    EXPECT_EQ(sums.host(), sums_parts.host()) << "the sums differ from the backend's ReduceSumTo, " << at;
  }
}

TEST_P(BackendConformance, UnaryForwardAndBackward) {
  TVLAB_NEED(Kernel::kUnary, Kernel::kUnaryBackward);
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kGeluErf, UnaryOp::kGeluTanh, UnaryOp::kSilu,
                     UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kExp, UnaryOp::kLog,
                     UnaryOp::kSqrt, UnaryOp::kSquare}) {
    bool positive = op == UnaryOp::kLog || op == UnaryOp::kSqrt;
    auto x = Random(37, 4, positive ? 0.1f : -3.0f, 3.0f);
    std::vector<float> y_ref(37);
    Dev y_be = D(y_ref);
    be_->Unary(op, D(x).p(), y_be.p(), 37);
    ref_->Unary(op, x.data(), y_ref.data(), 37);
    ExpectClose(y_be.host(), y_ref, 1e-5f, "unary " + std::to_string(static_cast<int>(op)));
    auto dy = Random(37, 5);
    std::vector<float> dx_ref(37);
    Dev dx_be = D(dx_ref);
    be_->UnaryBackward(op, D(x).p(), D(y_ref).p(), D(dy).p(), dx_be.p(), 37);
    ref_->UnaryBackward(op, x.data(), y_ref.data(), dy.data(), dx_ref.data(), 37);
    ExpectClose(dx_be.host(), dx_ref, 1e-5f, "unary backward " + std::to_string(static_cast<int>(op)));
  }
}

TEST_P(BackendConformance, BinaryBroadcastAndReduce) {
  TVLAB_NEED(Kernel::kBinary, Kernel::kReduceSumTo);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{4}, {2, 3, 4}},
      {{2, 3, 4}, {3, 1}},    {{2, 1, 4}, {1, 3, 1}}, {{2, 3, 4}, {}}};
  for (const auto& [sa, sb] : cases) {
    Shape out(std::max(sa.size(), sb.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t da = i + sa.size() >= out.size() ? sa[i + sa.size() - out.size()] : 1;
      int64_t db = i + sb.size() >= out.size() ? sb[i + sb.size() - out.size()] : 1;
      out[i] = std::max(da, db);
    }
    auto a = Random(NumElements(sa), 6), b = Random(NumElements(sb), 7, 0.5f, 2.0f);
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
      std::vector<float> o_ref(NumElements(out));
      Dev o_be = D(o_ref);
      be_->Binary(op, D(a).p(), sa, D(b).p(), sb, o_be.p(), out);
      ref_->Binary(op, a.data(), sa, b.data(), sb, o_ref.data(), out);
      ExpectClose(o_be.host(), o_ref, 1e-6f, "binary " + ShapeToString(sa) + ShapeToString(sb));
    }
    auto g = Random(NumElements(out), 8);
    std::vector<float> r_ref(NumElements(sb));
    Dev r_be = D(r_ref);
    be_->ReduceSumTo(D(g).p(), out, r_be.p(), sb);
    ref_->ReduceSumTo(g.data(), out, r_ref.data(), sb);
    ExpectClose(r_be.host(), r_ref, 1e-5f, "reduce to " + ShapeToString(sb));
  }
}

TEST_P(BackendConformance, SoftmaxWithMaskedRows) {
  TVLAB_NEED(Kernel::kSoftmax, Kernel::kSoftmaxBackward);
  const int64_t rows = 6, cols = 9;
  auto x = Random(rows * cols, 9);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < cols; ++c) x[2 * cols + c] = -inf;  // fully masked row
  x[3 * cols + 4] = -inf;
  std::vector<float> y_ref(rows * cols);
  Dev y_dev = D(y_ref);
  be_->Softmax(D(x).p(), y_dev.p(), rows, cols);
  ref_->Softmax(x.data(), y_ref.data(), rows, cols);
  const std::vector<float> y_be = y_dev.host();
  ExpectClose(y_be, y_ref, 1e-6f, "softmax");
  for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(y_be[2 * cols + c], 0.0f);
  EXPECT_EQ(y_be[3 * cols + 4], 0.0f);
  auto dy = Random(rows * cols, 10);
  std::vector<float> dx_ref(rows * cols);
  Dev dx_be = D(dx_ref);
  be_->SoftmaxBackward(D(y_ref).p(), D(dy).p(), dx_be.p(), rows, cols);
  ref_->SoftmaxBackward(y_ref.data(), dy.data(), dx_ref.data(), rows, cols);
  ExpectClose(dx_be.host(), dx_ref, 1e-5f, "softmax backward");
}

TEST_P(BackendConformance, AttentionMaskBiasCausalPaddingAndBoth) {
  TVLAB_NEED(Kernel::kAttentionMaskBias);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t t = 3, s = 5;
  AttentionMask causal = CausalMask(/*offset=*/2);  // queries at 2, 3, 4
  AttentionMask padding = KeyPaddingMask({5, 2, 0});
  AttentionMask both = padding;
  both.causal = true, both.causal_offset = 1;
  for (const AttentionMask& mask : {causal, padding, both}) {
    const int64_t rows = mask.key_lengths.empty() ? 1 : mask.key_lengths.size();
    std::vector<float> want(rows * t * s, 7.0f);  // (R, 1, T, S)
    Dev got = D(want);
    be_->AttentionMaskBias(mask, t, s, got.p());
    ref_->AttentionMaskBias(mask, t, s, want.data());
    EXPECT_EQ(got.host(), want);
  }
  // The reference itself, against the definition: causal row i sees keys
  // j <= offset + i; padding hides keys j >= length of the row.
  std::vector<float> c(t * s), p(3 * t * s);
  ref_->AttentionMaskBias(causal, t, s, c.data());
  EXPECT_EQ(c, std::vector<float>({0, 0, 0, -inf, -inf, 0, 0, 0, 0, -inf, 0, 0, 0, 0, 0}));
  ref_->AttentionMaskBias(both, t, s, p.data());
  EXPECT_EQ(std::vector<float>(p.begin() + t * s, p.begin() + 2 * t * s),  // row 1: length 2
            std::vector<float>({0, 0, -inf, -inf, -inf, 0, 0, -inf, -inf, -inf,
                                0, 0, -inf, -inf, -inf}));
  EXPECT_EQ(p[0 * s + 2], -inf);  // row 0, query 0 at position 1: key 2 is its future
  EXPECT_EQ(p[0 * s + 1], 0.0f);
  for (int64_t i = 2 * t * s; i < 3 * t * s; ++i) EXPECT_EQ(p[i], -inf);  // row 2: no keys
}

TEST_P(BackendConformance, AttentionMaskBiasWindows) {
  TVLAB_NEED(Kernel::kAttentionMaskBias);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t t = 3, s = 5;
  AttentionMask causal = CausalMask(/*offset=*/2);  // queries at 2, 3, 4
  causal.window = 2;                                // each sees itself and one before
  AttentionMask bidirectional = KeyPaddingMask({5, 4});
  bidirectional.window = 2;  // |i - j| < 2, queries at 0, 1, 2
  AttentionMask one = CausalMask(0);
  one.window = 1;
  for (const AttentionMask& mask : {causal, bidirectional, one}) {
    const int64_t rows = mask.key_lengths.empty() ? 1 : mask.key_lengths.size();
    std::vector<float> want(rows * t * s, 7.0f);  // (R, 1, T, S)
    Dev got = D(want);
    be_->AttentionMaskBias(mask, t, s, got.p());
    ref_->AttentionMaskBias(mask, t, s, want.data());
    EXPECT_EQ(got.host(), want);
  }
  // The reference against the definition (p - W < j <= p; |p - j| < W).
  std::vector<float> c(t * s), b(2 * t * s), o(t * s);
  ref_->AttentionMaskBias(causal, t, s, c.data());
  EXPECT_EQ(c, std::vector<float>({-inf, 0, 0, -inf, -inf, -inf, -inf, 0, 0, -inf,
                                   -inf, -inf, -inf, 0, 0}));
  ref_->AttentionMaskBias(bidirectional, t, s, b.data());
  EXPECT_EQ(std::vector<float>(b.begin() + t * s, b.end()),  // row 1: length 4
            std::vector<float>({0, 0, -inf, -inf, -inf, 0, 0, 0, -inf, -inf,
                                -inf, 0, 0, 0, -inf}));
  ref_->AttentionMaskBias(one, t, s, o.data());
  EXPECT_EQ(o, std::vector<float>({0, -inf, -inf, -inf, -inf, -inf, 0, -inf, -inf, -inf,
                                   -inf, -inf, 0, -inf, -inf}));
}

// Packed documents: a query sees only keys of its own document (a maximal
// run of equal ids), combined with causal, padding and a window.
TEST_P(BackendConformance, AttentionMaskBiasDocuments) {
  TVLAB_NEED(Kernel::kAttentionMaskBias);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t t = 3, s = 6;
  const std::vector<int32_t> ids = {0, 0, 1, 1, 1, 0, 4, 4, 4, 4, 4, 4};  // (2, 6)
  AttentionMask causal = CausalMask(/*offset=*/3);  // queries at 3, 4, 5
  SetDocuments(&causal, ids, 2, s);
  AttentionMask padded = KeyPaddingMask({6, 4});
  padded.window = 2;  // bidirectional, queries at 0, 1, 2
  SetDocuments(&padded, ids, 2, s);
  for (const AttentionMask& mask : {causal, padded}) {
    std::vector<float> want(2 * t * s, 7.0f);  // (2, 1, T, S)
    Dev got = D(want);
    be_->AttentionMaskBias(mask, t, s, got.p());
    ref_->AttentionMaskBias(mask, t, s, want.data());
    EXPECT_EQ(got.host(), want);
  }
  // The reference against the definition. Row 0, causal: position 3 sees
  // its document's keys 2, 3; position 4 keys 2 .. 4; position 5 (the
  // last id 0 starts a document of its own) only itself.
  std::vector<float> c(2 * t * s), b(2 * t * s);
  ref_->AttentionMaskBias(causal, t, s, c.data());
  EXPECT_EQ(std::vector<float>(c.begin(), c.begin() + t * s),
            std::vector<float>({-inf, -inf, 0, 0, -inf, -inf, -inf, -inf, 0, 0, 0, -inf,
                                -inf, -inf, -inf, -inf, -inf, 0}));
  // Row 0, |p - j| < 2 within the document: position 1 (document [0, 2))
  // sees 0, 1; position 2 (document [2, 5)) sees 2, 3.
  ref_->AttentionMaskBias(padded, t, s, b.data());
  EXPECT_EQ(std::vector<float>(b.begin(), b.begin() + t * s),
            std::vector<float>({0, 0, -inf, -inf, -inf, -inf, 0, 0, -inf, -inf, -inf, -inf,
                                -inf, -inf, 0, 0, -inf, -inf}));
}

TEST_P(BackendConformance, NormalizeLayerAndRms) {
  TVLAB_NEED(Kernel::kNormalize, Kernel::kNormalizeBackward);
  const int64_t rows = 5, cols = 16;
  auto x = Random(rows * cols, 11), gamma = Random(cols, 12), beta = Random(cols, 13);
  auto dy = Random(rows * cols, 14);
  for (bool subtract_mean : {true, false}) {
    for (bool affine : {true, false}) {
      const float* g = affine ? gamma.data() : nullptr;
      const float* b = affine && subtract_mean ? beta.data() : nullptr;
      Dev gamma_dev = D(gamma), beta_dev = D(beta);
      float* g_dev = affine ? gamma_dev.p() : nullptr;
      float* b_dev = affine && subtract_mean ? beta_dev.p() : nullptr;
      std::vector<float> y_ref(rows * cols), m_ref(rows), r_ref(rows);
      Dev y_be = D(y_ref), m_be = D(m_ref), r_be = D(r_ref);
      be_->Normalize(D(x).p(), g_dev, b_dev, y_be.p(), m_be.p(), r_be.p(), rows, cols, 1e-5f,
                     subtract_mean);
      ref_->Normalize(x.data(), g, b, y_ref.data(), m_ref.data(), r_ref.data(), rows, cols,
                      1e-5f, subtract_mean);
      ExpectClose(y_be.host(), y_ref, 1e-5f, "normalize");
      ExpectClose(r_be.host(), r_ref, 1e-5f, "rstd");
      std::vector<float> dx_ref(rows * cols), dg_ref(cols), db_ref(cols);
      Dev dx_be = D(dx_ref), dg_be = D(dg_ref), db_be = D(db_ref);
      be_->NormalizeBackward(D(x).p(), g_dev, D(m_ref).p(), D(r_ref).p(), D(dy).p(), dx_be.p(),
                             dg_be.p(), db_be.p(), rows, cols, subtract_mean);
      ref_->NormalizeBackward(x.data(), g, m_ref.data(), r_ref.data(), dy.data(),
                              dx_ref.data(), dg_ref.data(), db_ref.data(), rows, cols,
                              subtract_mean);
      ExpectClose(dx_be.host(), dx_ref, 1e-5f, "normalize backward");
      ExpectClose(dg_be.host(), dg_ref, 1e-5f, "dgamma");
    }
  }
}

TEST_P(BackendConformance, PermuteGatherScatter) {
  TVLAB_NEED(Kernel::kPermute, Kernel::kGather, Kernel::kScatterAdd);
  Shape shape = {2, 3, 4, 5};
  auto x = Random(NumElements(shape), 15);
  for (const std::vector<int>& perm : std::vector<std::vector<int>>{
           {0, 2, 1, 3}, {0, 1, 3, 2}, {3, 2, 1, 0}, {1, 0, 2, 3}}) {
    std::vector<float> y_ref(x.size());
    Dev y_be = D(y_ref);
    be_->Permute(D(x).p(), shape, perm, y_be.p());
    ref_->Permute(x.data(), shape, perm, y_ref.data());
    ExpectClose(y_be.host(), y_ref, 0.0f, "permute");
  }
  auto table = Random(7 * 3, 16);
  std::vector<int32_t> ids = {6, 0, 3, 3, 1};
  DeviceInts ids_dev = I(ids);
  std::vector<float> g_ref(15);
  Dev g_be = D(g_ref);
  be_->Gather(D(table).p(), 3, ids_dev.ptr(), 5, g_be.p());
  ref_->Gather(table.data(), 3, ids.data(), 5, g_ref.data());
  ExpectClose(g_be.host(), g_ref, 0.0f, "gather");
  std::vector<float> t_ref(21, 0.0f);
  Dev t_be = D(t_ref);
  be_->ScatterAdd(D(g_ref).p(), 3, ids_dev.ptr(), 5, t_be.p());
  ref_->ScatterAdd(g_ref.data(), 3, ids.data(), 5, t_ref.data());
  ExpectClose(t_be.host(), t_ref, 1e-6f, "scatter add");
}

TEST_P(BackendConformance, CrossEntropyMeanLossAndBackward) {
  TVLAB_NEED(Kernel::kCrossEntropy, Kernel::kCrossEntropyBackward);
  const int64_t rows = 4, cols = 6;
  auto logits = Random(rows * cols, 17);
  std::vector<int32_t> targets = {1, -100, 5, 0};
  DeviceInts targets_dev = I(targets);
  for (float smoothing : {0.0f, 0.1f}) {
    std::vector<float> l_ref(rows), p_ref(rows * cols), mean_ref(1);
    Dev l_be = D(l_ref), p_be = D(p_ref), mean_be = D(mean_ref);
    be_->CrossEntropy(D(logits).p(), targets_dev.ptr(), rows, cols, -100, smoothing, l_be.p(),
                      p_be.p(), mean_be.p());
    ref_->CrossEntropy(logits.data(), targets.data(), rows, cols, -100, smoothing, l_ref.data(),
                       p_ref.data(), mean_ref.data());
    ExpectClose(l_be.host(), l_ref, 1e-5f, "cross entropy");
    ExpectClose(mean_be.host(), mean_ref, 1e-5f, "mean cross entropy");
    // The mean is over the three counted rows (the -100 row is ignored).
    EXPECT_NEAR(mean_ref[0], (l_ref[0] + l_ref[2] + l_ref[3]) / 3.0f, 1e-6f);
    EXPECT_EQ(l_ref[1], 0.0f);
    std::vector<float> d_ref(rows * cols), dloss = {0.75f};
    Dev d_be = D(d_ref);
    be_->CrossEntropyBackward(D(p_ref).p(), targets_dev.ptr(), rows, cols, -100, smoothing,
                              D(dloss).p(), d_be.p());
    ref_->CrossEntropyBackward(p_ref.data(), targets.data(), rows, cols, -100, smoothing,
                               dloss.data(), d_ref.data());
    ExpectClose(d_be.host(), d_ref, 1e-6f, "cross entropy backward");
    // dL/dlogit = dloss / counted * (p - target): row 0, its target column 1.
    const float target = smoothing / cols + (1.0f - smoothing);
    EXPECT_NEAR(d_ref[1], 0.75f / 3.0f * (p_ref[1] - target), 1e-6f);
  }
}

TEST_P(BackendConformance, AdamWSteps) {
  TVLAB_NEED(Kernel::kAdamW);
  auto p0 = Random(10, 18), g = Random(10, 19);
  std::vector<float> p_ref = p0, m_ref(10, 0.f), v_ref(10, 0.f);
  Dev p_be = D(p0), m_be = D(m_ref), v_be = D(v_ref), g_be = D(g);
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, step};
    be_->AdamW(p_be.p(), g_be.p(), m_be.p(), v_be.p(), 10, h);
    ref_->AdamW(p_ref.data(), g.data(), m_ref.data(), v_ref.data(), 10, h);
  }
  ExpectClose(p_be.host(), p_ref, 1e-6f, "adamw");
}

// The one-call AdamW over several tensors (each with its own weight decay)
// equals AdamW called tensor by tensor, bit for bit.
TEST_P(BackendConformance, AdamWManyEqualsAdamWPerTensor) {
  TVLAB_NEED(Kernel::kAdamW);
  const std::vector<int64_t> sizes = {10, 1, 37};
  const std::vector<float> decays = {0.1f, 0.0f, 0.01f};
  std::vector<std::vector<float>> g, many, one;
  std::vector<Dev> p_many, m_many, v_many, g_dev, p_one, m_one, v_one;
  for (size_t t = 0; t < sizes.size(); ++t) {
    g.push_back(Random(sizes[t], 30 + t));
    const auto p0 = Random(sizes[t], 40 + t);
    const std::vector<float> zeros(sizes[t], 0.0f);
    g_dev.push_back(D(g[t]));
    p_many.push_back(D(p0)), m_many.push_back(D(zeros)), v_many.push_back(D(zeros));
    p_one.push_back(D(p0)), m_one.push_back(D(zeros)), v_one.push_back(D(zeros));
  }
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-2f, 0.9f, 0.999f, 1e-8f, /*weight_decay (ignored)=*/0.5f, step};
    std::vector<AdamWTensor> tensors;
    for (size_t t = 0; t < sizes.size(); ++t) {
      tensors.push_back({p_many[t].p(), g_dev[t].p(), m_many[t].p(), v_many[t].p(), sizes[t],
                         decays[t]});
      AdamWHyper own = h;
      own.weight_decay = decays[t];
      be_->AdamW(p_one[t].p(), g_dev[t].p(), m_one[t].p(), v_one[t].p(), sizes[t], own);
    }
    be_->AdamWMany(tensors, h);
  }
  for (size_t t = 0; t < sizes.size(); ++t) {
    EXPECT_EQ(p_many[t].host(), p_one[t].host()) << "tensor " << t;
    EXPECT_EQ(m_many[t].host(), m_one[t].host()) << "tensor " << t;
    EXPECT_EQ(v_many[t].host(), v_one[t].host()) << "tensor " << t;
  }
}

// SGD (momentum, Nesterov, weight decay) and Lion over several tensors, 3
// steps, against the reference.
TEST_P(BackendConformance, SgdManyAndLionManyMatchTheReference) {
  TVLAB_NEED(Kernel::kSgdMany);
  TVLAB_NEED(Kernel::kLionMany);
  const std::vector<int64_t> sizes = {10, 1, 37};
  const std::vector<float> decays = {0.1f, 0.0f, 0.01f};
  for (int variant = 0; variant < 4; ++variant) {  // sgd plain, momentum, nesterov; lion
    std::vector<std::vector<float>> p_ref, m_ref, g;
    std::vector<Dev> p_be, m_be, g_be;
    for (size_t t = 0; t < sizes.size(); ++t) {
      g.push_back(Random(sizes[t], 50 + t)), p_ref.push_back(Random(sizes[t], 60 + t));
      m_ref.push_back(std::vector<float>(sizes[t], 0.0f));
      g_be.push_back(D(g[t])), p_be.push_back(D(p_ref[t])), m_be.push_back(D(m_ref[t]));
    }
    for (int step = 1; step <= 3; ++step) {
      std::vector<AdamWTensor> be, ref;
      for (size_t t = 0; t < sizes.size(); ++t) {
        be.push_back({p_be[t].p(), g_be[t].p(), m_be[t].p(), nullptr, sizes[t], decays[t]});
        ref.push_back({p_ref[t].data(), g[t].data(), m_ref[t].data(), nullptr, sizes[t], decays[t]});
      }
      if (variant < 3) {
        const SgdHyper h{0.05f, variant == 0 ? 0.0f : 0.9f, variant == 2};
        be_->SgdMany(be, h), ref_->SgdMany(ref, h);
      } else {
        const LionHyper h{0.01f, 0.9f, 0.99f};
        be_->LionMany(be, h), ref_->LionMany(ref, h);
      }
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      ExpectClose(p_be[t].host(), p_ref[t], 1e-6f, "optimizer variant " + std::to_string(variant));
      ExpectClose(m_be[t].host(), m_ref[t], 1e-6f, "optimizer state variant " + std::to_string(variant));
    }
  }
}

TEST_P(BackendConformance, Copy2DArgMaxAndSumSquares) {
  TVLAB_NEED(Kernel::kCopy2D, Kernel::kArgMaxRows, Kernel::kSumSquares);
  // A (3 x 4) block out of a (3 x 7) source at column 2 into a (3 x 5)
  // destination at column 1; the rest of the destination is untouched.
  auto src = Random(21, 20);
  std::vector<float> dst_ref(15, -9.0f);
  Dev dst_be = D(dst_ref);
  be_->Copy2D(D(src).p() + 2, 7, dst_be.p() + 1, 5, 3, 4);
  ref_->Copy2D(src.data() + 2, 7, dst_ref.data() + 1, 5, 3, 4);
  EXPECT_EQ(dst_be.host(), dst_ref);
  EXPECT_EQ(dst_ref[0], -9.0f);
  EXPECT_EQ(dst_ref[5 + 1], src[7 + 2]);
  // ArgMax takes the first of equal maxima.
  std::vector<float> x = {1, 3, 3, 0, -1, -2, -1, -5, 7};
  DeviceInts best = DeviceInts::Empty(3, be_->device());
  be_->ArgMaxRows(D(x).p(), 3, 3, best.ptr());
  EXPECT_EQ(best.ToVector(), (std::vector<int32_t>{1, 0, 2}));
  // Sum of squares accumulates (in double) onto what is there.
  auto y = Random(1001, 21);
  double want = 0.5;
  for (float v : y) want += static_cast<double>(v) * v;
  DeviceInts acc = DeviceInts::Empty(2, be_->device());  // 8 bytes: one double
  double start = 0.5, got = 0.0;
  AllocatorFor(be_->device()).memory().CopyFromHost(&start, acc.ptr(), sizeof(double));
  be_->SumSquares(D(y).p(), 1001, reinterpret_cast<double*>(acc.ptr()));
  AllocatorFor(be_->device()).memory().CopyToHost(acc.ptr(), &got, sizeof(double));
  EXPECT_NEAR(got, want, 1e-9 * want);
}

TEST_P(BackendConformance, DropoutMaskIsThePhiloxDefinitionOnEveryBackend) {
  TVLAB_NEED(Kernel::kDropoutMask);
  const RngStream stream(77, RngPurpose::kDropout, 5);
  const int64_t n = 1001;  // odd: the last word's high half is unused
  Dev mask = D(std::vector<float>(n, -1.0f));
  be_->DropoutMask(stream, 0.25f, mask.p(), n);
  const std::vector<float> got = mask.host();
  std::vector<uint32_t> words((n + 1) / 2);
  stream.Words(0, words.size(), words.data());
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t half = (words[i / 2] >> ((i % 2) * 16)) & 0xFFFFu;
    const float want = half < 16384u ? 0.0f : 1.0f / 0.75f;
    ASSERT_EQ(got[i], want) << i;
    dropped += got[i] == 0.0f;
  }
  EXPECT_NEAR(static_cast<double>(dropped) / n, 0.25, 0.05);
}

TEST_P(BackendConformance, PositionTablesRotarySinusoidalAndAlibi) {
  TVLAB_NEED(Kernel::kRotaryTables, Kernel::kSinusoidalTable, Kernel::kAlibiBias);
  const int64_t t = 5, d = 6, offset = 1000;
  std::vector<float> cos_ref(t * d / 2), sin_ref(t * d / 2);
  Dev cos_be = D(cos_ref), sin_be = D(sin_ref);
  be_->RotaryTables(offset, t, d, 10000.0, cos_be.p(), sin_be.p());
  ref_->RotaryTables(offset, t, d, 10000.0, cos_ref.data(), sin_ref.data());
  EXPECT_EQ(cos_be.host(), cos_ref);
  EXPECT_EQ(sin_be.host(), sin_ref);
  // Pair i = 1 of position offset + 2: angle (offset + 2) * 10000^(-2/6).
  const double angle = (offset + 2) * std::pow(10000.0, -2.0 / 6.0);
  EXPECT_FLOAT_EQ(cos_ref[2 * 3 + 1], static_cast<float>(std::cos(angle)));
  EXPECT_FLOAT_EQ(sin_ref[2 * 3 + 1], static_cast<float>(std::sin(angle)));

  std::vector<float> table_ref(t * d);
  Dev table_be = D(table_ref);
  be_->SinusoidalTable(0, t, d, 10000.0, table_be.p());
  ref_->SinusoidalTable(0, t, d, 10000.0, table_ref.data());
  EXPECT_EQ(table_be.host(), table_ref);
  EXPECT_FLOAT_EQ(table_ref[0], 0.0f);  // sin(0)
  EXPECT_FLOAT_EQ(table_ref[1], 1.0f);  // cos(0)
  EXPECT_FLOAT_EQ(table_ref[1 * d + 0], static_cast<float>(std::sin(1.0)));

  const std::vector<double> slopes = {0.5, 0.25};
  std::vector<float> bias_ref(2 * 3 * 4);  // (1, H=2, T=3, S=4), queries at 1..3
  Dev bias_be = D(bias_ref);
  be_->AlibiBias(slopes, 1, 3, 4, bias_be.p());
  ref_->AlibiBias(slopes, 1, 3, 4, bias_ref.data());
  EXPECT_EQ(bias_be.host(), bias_ref);
  EXPECT_EQ(bias_ref[(1 * 3 + 2) * 4 + 0], -0.25f * 3);  // head 1, query 3, key 0
  EXPECT_EQ(bias_ref[(0 * 3 + 0) * 4 + 1], 0.0f);        // query 1 on key 1
}

// RoPE's turn: every backend gives the reference's bits on awkward sizes,
// head- and token-major rows, both pairings, both directions and in place;
// the reference is the written definition pair by pair, and the inverse turn
// undoes the turn.
TEST_P(BackendConformance, RotaryTurnsPairsBothWays) {
  TVLAB_NEED(Kernel::kRotary);
  const int64_t rows = 3, t = 5;
  for (int64_t heads : {1, 2})
    for (int64_t d : {2, 6, 10}) {
      const auto x = Random(rows * t * heads * d, 31), cos = Random(t * d / 2, 32), sin = Random(t * d / 2, 33);
      for (bool interleaved : {false, true})
        for (bool inverse : {false, true}) {
          const std::string what = "heads " + std::to_string(heads) + " d " + std::to_string(d) +
                                   (interleaved ? " interleaved" : " half-split") + (inverse ? " inverse" : "");
          std::vector<float> y_ref(x.size());
          ref_->Rotary(x.data(), cos.data(), sin.data(), y_ref.data(), rows, t, heads, d, interleaved, inverse);
          Dev y_be = D(y_ref), in_place = D(x);
          be_->Rotary(D(x).p(), D(cos).p(), D(sin).p(), y_be.p(), rows, t, heads, d, interleaved, inverse);
          be_->Rotary(in_place.p(), D(cos).p(), D(sin).p(), in_place.p(), rows, t, heads, d, interleaved, inverse);
          EXPECT_EQ(y_be.host(), y_ref) << what;
          EXPECT_EQ(in_place.host(), y_ref) << what << " in place";
          // The last pair of the last head of row 2 at position 3.
          const int64_t half = d / 2, r = 2, p = 3, h = heads - 1, i = half - 1;
          const int64_t ia = ((r * t + p) * heads + h) * d + (interleaved ? 2 * i : i);
          const int64_t ib = ia + (interleaved ? 1 : half);
          const float a = x[ia], b = x[ib], c = cos[p * half + i];
          const float sn = inverse ? -sin[p * half + i] : sin[p * half + i];
          EXPECT_NEAR(y_ref[ia], a * c - b * sn, 1e-6f) << what;
          EXPECT_NEAR(y_ref[ib], a * sn + b * c, 1e-6f) << what;
        }
      // With a real rotation table, the inverse turn gives x back.
      std::vector<float> c(t * d / 2), sn(t * d / 2), y(x.size()), back(x.size());
      for (size_t j = 0; j < c.size(); ++j) c[j] = std::cos(0.7f * j), sn[j] = std::sin(0.7f * j);
      ref_->Rotary(x.data(), c.data(), sn.data(), y.data(), rows, t, heads, d, false, false);
      ref_->Rotary(y.data(), c.data(), sn.data(), back.data(), rows, t, heads, d, false, true);
      ExpectClose(back, x, 1e-5f, "inverse of the turn");
    }
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendConformance, ::testing::ValuesIn(BackendsToCompare()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
