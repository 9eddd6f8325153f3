// Every kernel of every registered backend against the reference backend, on
// random inputs of awkward sizes. A new backend is covered by registering it.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<float> Random(int64_t n, uint64_t salt, float lo = -2.0f, float hi = 2.0f) {
  RngStream rng(1234, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rng.Uniform(i);
  return v;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

class BackendConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto made = MakeBackend(GetParam());
    if (made.status().code() == absl::StatusCode::kFailedPrecondition)
      GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda on a machine without a GPU
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    ref_ = std::move(*MakeBackend("reference"));
  }
  std::unique_ptr<Backend> be_, ref_;
};

TEST_P(BackendConformance, GemmAllTransposesBatchesAndBroadcast) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (bool broadcast_b : {false, true}) {
        GemmDesc d;
        d.batch = 3, d.m = 5, d.n = 7, d.k = 4, d.trans_a = ta, d.trans_b = tb;
        d.stride_a = d.m * d.k, d.stride_b = broadcast_b ? 0 : d.k * d.n, d.stride_c = d.m * d.n;
        d.alpha = 0.5f, d.beta = broadcast_b ? 1.0f : 0.0f;
        auto a = Random(d.batch * d.m * d.k, 1), b = Random(d.batch * d.k * d.n, 2);
        auto c0 = Random(d.batch * d.m * d.n, 3);
        auto c_be = c0, c_ref = c0;
        be_->Gemm(d, a.data(), b.data(), c_be.data());
        ref_->Gemm(d, a.data(), b.data(), c_ref.data());
        ExpectClose(c_be, c_ref, 1e-5f, "gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      }
    }
  }
}

TEST_P(BackendConformance, UnaryForwardAndBackward) {
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kGeluErf, UnaryOp::kGeluTanh, UnaryOp::kSilu,
                     UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kExp, UnaryOp::kLog,
                     UnaryOp::kSqrt, UnaryOp::kSquare}) {
    bool positive = op == UnaryOp::kLog || op == UnaryOp::kSqrt;
    auto x = Random(37, 4, positive ? 0.1f : -3.0f, 3.0f);
    std::vector<float> y_be(37), y_ref(37);
    be_->Unary(op, x.data(), y_be.data(), 37);
    ref_->Unary(op, x.data(), y_ref.data(), 37);
    ExpectClose(y_be, y_ref, 1e-5f, "unary " + std::to_string(static_cast<int>(op)));
    auto dy = Random(37, 5);
    std::vector<float> dx_be(37), dx_ref(37);
    be_->UnaryBackward(op, x.data(), y_ref.data(), dy.data(), dx_be.data(), 37);
    ref_->UnaryBackward(op, x.data(), y_ref.data(), dy.data(), dx_ref.data(), 37);
    ExpectClose(dx_be, dx_ref, 1e-5f, "unary backward " + std::to_string(static_cast<int>(op)));
  }
}

TEST_P(BackendConformance, BinaryBroadcastAndReduce) {
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
      std::vector<float> o_be(NumElements(out)), o_ref(NumElements(out));
      be_->Binary(op, a.data(), sa, b.data(), sb, o_be.data(), out);
      ref_->Binary(op, a.data(), sa, b.data(), sb, o_ref.data(), out);
      ExpectClose(o_be, o_ref, 1e-6f, "binary " + ShapeToString(sa) + ShapeToString(sb));
    }
    auto g = Random(NumElements(out), 8);
    std::vector<float> r_be(NumElements(sb)), r_ref(NumElements(sb));
    be_->ReduceSumTo(g.data(), out, r_be.data(), sb);
    ref_->ReduceSumTo(g.data(), out, r_ref.data(), sb);
    ExpectClose(r_be, r_ref, 1e-5f, "reduce to " + ShapeToString(sb));
  }
}

TEST_P(BackendConformance, SoftmaxWithMaskedRows) {
  const int64_t rows = 6, cols = 9;
  auto x = Random(rows * cols, 9);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < cols; ++c) x[2 * cols + c] = -inf;  // fully masked row
  x[3 * cols + 4] = -inf;
  std::vector<float> y_be(rows * cols), y_ref(rows * cols);
  be_->Softmax(x.data(), y_be.data(), rows, cols);
  ref_->Softmax(x.data(), y_ref.data(), rows, cols);
  ExpectClose(y_be, y_ref, 1e-6f, "softmax");
  for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(y_be[2 * cols + c], 0.0f);
  EXPECT_EQ(y_be[3 * cols + 4], 0.0f);
  auto dy = Random(rows * cols, 10);
  std::vector<float> dx_be(rows * cols), dx_ref(rows * cols);
  be_->SoftmaxBackward(y_ref.data(), dy.data(), dx_be.data(), rows, cols);
  ref_->SoftmaxBackward(y_ref.data(), dy.data(), dx_ref.data(), rows, cols);
  ExpectClose(dx_be, dx_ref, 1e-5f, "softmax backward");
}

TEST_P(BackendConformance, AttentionMaskBiasCausalPaddingAndBoth) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t t = 3, s = 5;
  AttentionMask causal = CausalMask(/*offset=*/2);  // queries at 2, 3, 4
  AttentionMask padding = KeyPaddingMask({5, 2, 0});
  AttentionMask both = padding;
  both.causal = true, both.causal_offset = 1;
  for (const AttentionMask& mask : {causal, padding, both}) {
    const int64_t rows = mask.key_lengths.empty() ? 1 : mask.key_lengths.size();
    std::vector<float> got(rows * t * s, 7.0f), want(rows * t * s, 7.0f);  // (R, 1, T, S)
    be_->AttentionMaskBias(mask, t, s, got.data());
    ref_->AttentionMaskBias(mask, t, s, want.data());
    EXPECT_EQ(got, want);
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

TEST_P(BackendConformance, NormalizeLayerAndRms) {
  const int64_t rows = 5, cols = 16;
  auto x = Random(rows * cols, 11), gamma = Random(cols, 12), beta = Random(cols, 13);
  auto dy = Random(rows * cols, 14);
  for (bool subtract_mean : {true, false}) {
    for (bool affine : {true, false}) {
      const float* g = affine ? gamma.data() : nullptr;
      const float* b = affine && subtract_mean ? beta.data() : nullptr;
      std::vector<float> y_be(rows * cols), y_ref(rows * cols), m_be(rows), m_ref(rows),
          r_be(rows), r_ref(rows);
      be_->Normalize(x.data(), g, b, y_be.data(), m_be.data(), r_be.data(), rows, cols, 1e-5f,
                     subtract_mean);
      ref_->Normalize(x.data(), g, b, y_ref.data(), m_ref.data(), r_ref.data(), rows, cols,
                      1e-5f, subtract_mean);
      ExpectClose(y_be, y_ref, 1e-5f, "normalize");
      ExpectClose(r_be, r_ref, 1e-5f, "rstd");
      std::vector<float> dx_be(rows * cols), dx_ref(rows * cols), dg_be(cols), dg_ref(cols),
          db_be(cols), db_ref(cols);
      be_->NormalizeBackward(x.data(), g, m_ref.data(), r_ref.data(), dy.data(), dx_be.data(),
                             dg_be.data(), db_be.data(), rows, cols, subtract_mean);
      ref_->NormalizeBackward(x.data(), g, m_ref.data(), r_ref.data(), dy.data(),
                              dx_ref.data(), dg_ref.data(), db_ref.data(), rows, cols,
                              subtract_mean);
      ExpectClose(dx_be, dx_ref, 1e-5f, "normalize backward");
      ExpectClose(dg_be, dg_ref, 1e-5f, "dgamma");
    }
  }
}

TEST_P(BackendConformance, PermuteGatherScatter) {
  Shape shape = {2, 3, 4, 5};
  auto x = Random(NumElements(shape), 15);
  for (const std::vector<int>& perm : std::vector<std::vector<int>>{
           {0, 2, 1, 3}, {0, 1, 3, 2}, {3, 2, 1, 0}, {1, 0, 2, 3}}) {
    std::vector<float> y_be(x.size()), y_ref(x.size());
    be_->Permute(x.data(), shape, perm, y_be.data());
    ref_->Permute(x.data(), shape, perm, y_ref.data());
    ExpectClose(y_be, y_ref, 0.0f, "permute");
  }
  auto table = Random(7 * 3, 16);
  std::vector<int32_t> ids = {6, 0, 3, 3, 1};
  std::vector<float> g_be(15), g_ref(15);
  be_->Gather(table.data(), 3, ids.data(), 5, g_be.data());
  ref_->Gather(table.data(), 3, ids.data(), 5, g_ref.data());
  ExpectClose(g_be, g_ref, 0.0f, "gather");
  std::vector<float> t_be(21, 0.0f), t_ref(21, 0.0f);
  be_->ScatterAdd(g_ref.data(), 3, ids.data(), 5, t_be.data());
  ref_->ScatterAdd(g_ref.data(), 3, ids.data(), 5, t_ref.data());
  ExpectClose(t_be, t_ref, 1e-6f, "scatter add");
}

TEST_P(BackendConformance, CrossEntropyAndAdamW) {
  const int64_t rows = 4, cols = 6;
  auto logits = Random(rows * cols, 17);
  std::vector<int32_t> targets = {1, -100, 5, 0};
  for (float smoothing : {0.0f, 0.1f}) {
    std::vector<float> l_be(rows), l_ref(rows), p_be(rows * cols), p_ref(rows * cols);
    be_->CrossEntropy(logits.data(), targets.data(), rows, cols, -100, smoothing, l_be.data(),
                      p_be.data());
    ref_->CrossEntropy(logits.data(), targets.data(), rows, cols, -100, smoothing, l_ref.data(),
                       p_ref.data());
    ExpectClose(l_be, l_ref, 1e-5f, "cross entropy");
    std::vector<float> d_be(rows * cols), d_ref(rows * cols);
    be_->CrossEntropyBackward(p_ref.data(), targets.data(), rows, cols, -100, smoothing, 0.25f,
                              d_be.data());
    ref_->CrossEntropyBackward(p_ref.data(), targets.data(), rows, cols, -100, smoothing, 0.25f,
                               d_ref.data());
    ExpectClose(d_be, d_ref, 1e-6f, "cross entropy backward");
  }
  auto p0 = Random(10, 18), g = Random(10, 19);
  std::vector<float> p_be = p0, p_ref = p0, m_be(10, 0.f), m_ref(10, 0.f), v_be(10, 0.f),
                     v_ref(10, 0.f);
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, step};
    be_->AdamW(p_be.data(), g.data(), m_be.data(), v_be.data(), 10, h);
    ref_->AdamW(p_ref.data(), g.data(), m_ref.data(), v_ref.data(), 10, h);
  }
  ExpectClose(p_be, p_ref, 1e-6f, "adamw");
}

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendConformance,
                         ::testing::ValuesIn(RegisteredBackends()),
                         [](const auto& info) { return info.param; });

TEST(BackendRegistry, CensusAndUnknownName) {
  // cpu_onednn and reference always; gpu_cuda too under --config=cuda, usable
  // or refused cleanly (FailedPrecondition) where there is no GPU.
  std::vector<std::string> registered = RegisteredBackends();
  EXPECT_EQ(registered.front(), "cpu_onednn");
  EXPECT_EQ(registered.back(), "reference");
  for (const std::string& name : registered) {
    if (name == "cpu_onednn" || name == "reference") continue;
    EXPECT_EQ(name, "gpu_cuda");
    auto made = MakeBackend(name);
    EXPECT_TRUE(made.ok() || made.status().code() == absl::StatusCode::kFailedPrecondition)
        << made.status();
  }
  absl::Status status = SetBackend("tpu");
  EXPECT_NE(std::string(status.message()).find("unknown backend plugin 'tpu'; registered: cpu_onednn, "),
            std::string::npos)
      << status;
  EXPECT_EQ(CurrentBackend().name(), "cpu_onednn");
}

}  // namespace
}  // namespace tvlab
