// The CPU backend's threaded loops, at sizes above its threading threshold
// (kParallelElements = 2^20 elements, framework/backend/cpu_onednn/
// onednn_backend.cc) and with two OpenMP threads, against the reference
// backend. backend_conformance_test.cc checks the same kernels at small sizes,
// where they run on one thread; this checks the split work (row ranges,
// column chunks, per-thread dgamma/dbeta partial sums) gives the same result.

#include <omp.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/fused_attention.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// B 16 x T 256 x C 256: the GPT benchmark's (B, T, C) activations, 2^20.
constexpr int64_t kRows = 16 * 256, kCols = 256, kN = kRows * kCols;

std::vector<float> Random(int64_t n, uint64_t salt, float lo = -2.0f, float hi = 2.0f) {
  RngStream rng(99, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * rng.Uniform(i);
  return v;
}

// |got - want| <= tol * (1 + |want|) everywhere; reports the first miss only.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

class OnednnLargeKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = MakeBackend("cpu_onednn");
    ASSERT_TRUE(made.ok()) << made.status();
    be_ = std::move(*made);
    ref_ = std::move(*MakeBackend("reference"));
    threads_ = omp_get_max_threads();
    omp_set_num_threads(2);  // the threaded path, even on a one-core machine
  }
  void TearDown() override { omp_set_num_threads(threads_); }
  std::unique_ptr<Backend> be_, ref_;
  int threads_ = 1;
};

// The tiled fused attention beyond 1024 queries, where its query tiles
// have 128 rows (64 up to there, which the conformance suite's cases
// cover): causal with dropout, shared key/value heads, split over threads.
TEST_F(OnednnLargeKernels, FusedAttentionPastTheShortQueryTiles) {
  FusedAttentionDesc d;
  d.batch = 1, d.heads = 2, d.kv_heads = 1, d.queries = 1100, d.keys = 1100;
  d.head_dim = d.value_dim = 16, d.scale = 0.25f;
  d.mask.causal = true;
  d.dropout = 0.1f;
  d.dropout_stream = RngStream(5, RngPurpose::kDropout, 3);
  const int64_t nq = d.heads * d.queries * d.head_dim, nk = d.keys * d.head_dim;
  const std::vector<float> q = Random(nq, 1), k = Random(nk, 2), v = Random(nk, 3), dout = Random(nq, 4);
  std::vector<std::vector<float>> got, want;
  for (Backend* backend : {be_.get(), ref_.get()}) {
    std::vector<float> out(nq), lse(d.heads * d.queries), dq(nq), dk(nk), dv(nk);
    backend->FusedAttention(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    backend->FusedAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                                    dq.data(), dk.data(), dv.data(), nullptr);
    (backend == be_.get() ? got : want) = {out, lse, dq, dk, dv};
  }
  const char* names[] = {"out", "lse", "dq", "dk", "dv"};
  for (int i = 0; i < 5; ++i) ExpectClose(got[i], want[i], 2e-4f, names[i]);
}

TEST_F(OnednnLargeKernels, BinaryBiasScalarAndSameShape) {
  auto x = Random(kN, 1), y = Random(kN, 2), bias = Random(kCols, 3);
  const Shape xs = {16, 256, kCols};
  std::vector<float> got(kN), want(kN);
  be_->Binary(BinaryOp::kAdd, x.data(), xs, bias.data(), {kCols}, got.data(), xs);
  ref_->Binary(BinaryOp::kAdd, x.data(), xs, bias.data(), {kCols}, want.data(), xs);
  ExpectClose(got, want, 0.0f, "x + bias");
  const float s = 0.125f;
  be_->Binary(BinaryOp::kMul, x.data(), xs, &s, {}, got.data(), xs);
  ref_->Binary(BinaryOp::kMul, x.data(), xs, &s, {}, want.data(), xs);
  ExpectClose(got, want, 0.0f, "x * scalar");
  be_->Binary(BinaryOp::kSub, &s, {}, x.data(), xs, got.data(), xs);
  ref_->Binary(BinaryOp::kSub, &s, {}, x.data(), xs, want.data(), xs);
  ExpectClose(got, want, 0.0f, "scalar - x");
  be_->Binary(BinaryOp::kMul, x.data(), xs, y.data(), xs, got.data(), xs);
  ref_->Binary(BinaryOp::kMul, x.data(), xs, y.data(), xs, want.data(), xs);
  ExpectClose(got, want, 0.0f, "x * y");
}

TEST_F(OnednnLargeKernels, ReduceSumToBiasGradient) {
  auto g = Random(kN, 4);
  std::vector<float> got(kCols), want(kCols);
  be_->ReduceSumTo(g.data(), {16, 256, kCols}, got.data(), {kCols});
  ref_->ReduceSumTo(g.data(), {16, 256, kCols}, want.data(), {kCols});
  ExpectClose(got, want, 1e-4f, "bias gradient");
}

TEST_F(OnednnLargeKernels, GeluAndSiluBackward) {
  // The FFN hidden activations of the GPT benchmark are 4x this.
  for (UnaryOp op : {UnaryOp::kGeluErf, UnaryOp::kGeluTanh, UnaryOp::kSilu, UnaryOp::kRelu}) {
    auto x = Random(kN, 5, -4.0f, 4.0f), dy = Random(kN, 6);
    std::vector<float> y(kN), got(kN), want(kN);
    ref_->Unary(op, x.data(), y.data(), kN);
    be_->UnaryBackward(op, x.data(), y.data(), dy.data(), got.data(), kN);
    ref_->UnaryBackward(op, x.data(), y.data(), dy.data(), want.data(), kN);
    ExpectClose(got, want, 1e-5f, "unary backward " + std::to_string(static_cast<int>(op)));
  }
}

TEST_F(OnednnLargeKernels, SoftmaxForwardAndBackward) {
  auto x = Random(kN, 7, -6.0f, 6.0f), dy = Random(kN, 8);
  // Row 3 fully masked: zeros, not NaN.
  for (int64_t c = 0; c < kCols; ++c) x[3 * kCols + c] = -INFINITY;
  std::vector<float> y(kN), y_ref(kN), dx(kN), dx_ref(kN);
  be_->Softmax(x.data(), y.data(), kRows, kCols);
  ref_->Softmax(x.data(), y_ref.data(), kRows, kCols);
  ExpectClose(y, y_ref, 1e-5f, "softmax");
  be_->SoftmaxBackward(y_ref.data(), dy.data(), dx.data(), kRows, kCols);
  ref_->SoftmaxBackward(y_ref.data(), dy.data(), dx_ref.data(), kRows, kCols);
  ExpectClose(dx, dx_ref, 1e-5f, "softmax backward");
}

TEST_F(OnednnLargeKernels, NormalizeBackwardLayerAndRms) {
  auto x = Random(kN, 9), dy = Random(kN, 10), gamma = Random(kCols, 11);
  for (bool subtract_mean : {true, false}) {
    std::vector<float> y(kN), mean(kRows), rstd(kRows);
    ref_->Normalize(x.data(), gamma.data(), nullptr, y.data(), mean.data(), rstd.data(), kRows,
                    kCols, 1e-5f, subtract_mean);
    // dgamma/dbeta accumulate (+=) onto what is there.
    std::vector<float> dx(kN), dg(kCols, 1.0f), db(kCols, -1.0f);
    std::vector<float> dx_ref(kN), dg_ref(kCols, 1.0f), db_ref(kCols, -1.0f);
    be_->NormalizeBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(),
                           dx.data(), dg.data(), db.data(), kRows, kCols, subtract_mean);
    ref_->NormalizeBackward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(),
                            dx_ref.data(), dg_ref.data(), db_ref.data(), kRows, kCols,
                            subtract_mean);
    const std::string what = subtract_mean ? "layernorm" : "rmsnorm";
    ExpectClose(dx, dx_ref, 1e-5f, what + " dx");
    // Sums of 4096 rows in another order: float rounding, not a formula slip.
    ExpectClose(dg, dg_ref, 1e-4f, what + " dgamma");
    ExpectClose(db, db_ref, 1e-4f, what + " dbeta");
  }
}

TEST_F(OnednnLargeKernels, PermuteHeadSplit) {
  // (B, T, H, hs) -> (B, H, T, hs)
  const Shape shape = {16, 256, 8, 32};
  auto x = Random(kN, 12);
  std::vector<float> got(kN), want(kN);
  be_->Permute(x.data(), shape, {0, 2, 1, 3}, got.data());
  ref_->Permute(x.data(), shape, {0, 2, 1, 3}, want.data());
  ExpectClose(got, want, 0.0f, "permute");
  // Other ranks take the odometer loop: rank 3 at 2^20 elements (threaded)
  // and rank 5.
  for (const auto& [other, other_perm] : std::vector<std::pair<Shape, std::vector<int>>>{
           {{256, 16, 256}, {1, 0, 2}}, {{4, 5, 6, 7, 8}, {0, 3, 1, 2, 4}}}) {
    const auto v = Random(NumElements(other), 21);
    std::vector<float> got_other(v.size()), want_other(v.size());
    be_->Permute(v.data(), other, other_perm, got_other.data());
    ref_->Permute(v.data(), other, other_perm, want_other.data());
    ExpectClose(got_other, want_other, 0.0f, "permute rank " + std::to_string(other.size()));
  }
  // An empty dimension: nothing to copy, and no division by it.
  float untouched = 7.0f;
  be_->Permute(x.data(), {2, 0, 8, 32}, {0, 2, 1, 3}, &untouched);
  EXPECT_EQ(untouched, 7.0f);
}

// Chunked (2048 elements) and, past 2^16 elements, threaded: the same bits
// as the reference's one pass, at odd lengths that end mid-word.
TEST_F(OnednnLargeKernels, DropoutMaskIsTheReferenceMaskBitForBit) {
  const RngStream stream(5, RngPurpose::kDropout, 12);
  for (int64_t n : {int64_t{5 * 2048 + 1001}, int64_t{(1 << 17) + 3}}) {
    std::vector<float> got(n, -1.0f), want(n, -2.0f);
    be_->DropoutMask(stream, 0.1f, got.data(), n);
    ref_->DropoutMask(stream, 0.1f, want.data(), n);
    ExpectClose(got, want, 0.0f, "dropout mask n=" + std::to_string(n));
  }
}

TEST_F(OnednnLargeKernels, AdamWMatchesReference) {
  const int64_t n = 256 * 1024;  // a d 256 x d_ff 1024 weight
  auto p = Random(n, 13), g = Random(n, 14);
  std::vector<float> m(n, 0.0f), v(n, 0.0f), p_ref = p, m_ref = m, v_ref = v;
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, step};
    be_->AdamW(p.data(), g.data(), m.data(), v.data(), n, h);
    ref_->AdamW(p_ref.data(), g.data(), m_ref.data(), v_ref.data(), n, h);
  }
  ExpectClose(p, p_ref, 1e-6f, "param");
  ExpectClose(v, v_ref, 1e-6f, "v");
}

// AdamW's bits are the reference's (the same IEEE operations in the same
// order, vectorised: no FMA contraction, no reciprocal in place of a
// division): gradients from 2^-60 to 2^20, moments of every size (zeros
// among them), early and late steps, three beta2s and three eps (0 too),
// and a length that leaves a scalar tail after the vectors.
TEST_F(OnednnLargeKernels, AdamWIsTheReferenceBitForBit) {
  const int64_t n = 100'003;
  const auto unit = Random(n, 40), scales = Random(n, 41, -60.0f, 20.0f), start = Random(n, 42);
  std::vector<float> g(n), m0(n), v0(n);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = unit[i] * std::exp2(std::floor(scales[i]));
    m0[i] = i % 97 == 0 ? 0.0f : 0.3f * start[i] * std::fabs(g[i]);
    v0[i] = i % 89 == 0 ? 0.0f : std::fabs(start[i] * g[i] * g[i]);
  }
  for (const float beta2 : {0.999f, 0.95f, 0.99999f})
    for (const float eps : {1e-8f, 1e-12f, 0.0f})
      for (const int64_t step : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{100}, int64_t{5000}}) {
        std::vector<float> p = Random(n, 43), m = m0, v = v0, p_ref = p, m_ref = m0, v_ref = v0;
        const AdamWHyper h{3e-4f, 0.9f, beta2, eps, 0.1f, step};
        be_->AdamW(p.data(), g.data(), m.data(), v.data(), n, h);
        ref_->AdamW(p_ref.data(), g.data(), m_ref.data(), v_ref.data(), n, h);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::memcmp(&p[i], &p_ref[i], sizeof(float)), 0)
              << "param " << i << ": " << p[i] << " vs " << p_ref[i] << " (beta2 " << beta2 << ", eps " << eps
              << ", step " << step << ", grad " << g[i] << ")";
          ASSERT_EQ(std::memcmp(&m[i], &m_ref[i], sizeof(float)), 0) << "m " << i;
          ASSERT_EQ(std::memcmp(&v[i], &v_ref[i], sizeof(float)), 0) << "v " << i;
        }
      }
}

// One threaded pass over several tensors (chunks of 2^14 elements; a tensor
// smaller than a chunk, one not a multiple of it) equals the reference's
// AdamW tensor by tensor, each with its own weight decay.
TEST_F(OnednnLargeKernels, AdamWManyMatchesReferencePerTensor) {
  const std::vector<int64_t> sizes = {256 * 1024, 256, 100'003};
  const std::vector<float> decays = {0.1f, 0.0f, 0.05f};
  std::vector<std::vector<float>> p, g, m, v, p_ref, m_ref, v_ref;
  for (size_t t = 0; t < sizes.size(); ++t) {
    p.push_back(Random(sizes[t], 20 + t)), g.push_back(Random(sizes[t], 30 + t));
    m.emplace_back(sizes[t], 0.0f), v.emplace_back(sizes[t], 0.0f);
    p_ref.push_back(p[t]), m_ref.push_back(m[t]), v_ref.push_back(v[t]);
  }
  for (int64_t step = 1; step <= 3; ++step) {
    AdamWHyper h{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, step};
    std::vector<AdamWTensor> tensors;
    for (size_t t = 0; t < sizes.size(); ++t) {
      tensors.push_back({p[t].data(), g[t].data(), m[t].data(), v[t].data(), sizes[t], decays[t]});
      AdamWHyper own = h;
      own.weight_decay = decays[t];
      ref_->AdamW(p_ref[t].data(), g[t].data(), m_ref[t].data(), v_ref[t].data(), sizes[t], own);
    }
    be_->AdamWMany(tensors, h);
  }
  for (size_t t = 0; t < sizes.size(); ++t) {
    ExpectClose(p[t], p_ref[t], 1e-6f, "param of tensor " + std::to_string(t));
    ExpectClose(m[t], m_ref[t], 1e-6f, "m of tensor " + std::to_string(t));
    ExpectClose(v[t], v_ref[t], 1e-6f, "v of tensor " + std::to_string(t));
  }
}

// Mixture-of-experts routing over 4096 tokens of 256, top-2 of 8 experts,
// 640 slots each (some dropped): the threaded loops write each row once and
// sum in the reference's order, so results are bitwise equal.
TEST_F(OnednnLargeKernels, RoutingKernelsBitwiseAsReference) {
  const int64_t experts = 8, k = 2, capacity = 640, slots_n = experts * capacity;
  auto logits = Random(kRows * experts, 20), x = Random(kN, 21), dy = Random(kN, 22);
  std::vector<float> gates(kRows * k), gates_be(kRows * k), dtop(kRows * experts),
      dtop_be(kRows * experts), demand(experts);
  std::vector<int32_t> chosen(kRows * k), chosen_be(kRows * k), slots(kRows * k), slot_a(slots_n);
  ref_->TopKRows(logits.data(), kRows, experts, k, gates.data(), chosen.data());
  be_->TopKRows(logits.data(), kRows, experts, k, gates_be.data(), chosen_be.data());
  EXPECT_EQ(gates_be, gates);
  EXPECT_EQ(chosen_be, chosen);
  ref_->TopKRowsBackward(gates.data(), chosen.data(), kRows, experts, k, dtop.data());
  be_->TopKRowsBackward(gates.data(), chosen.data(), kRows, experts, k, dtop_be.data());
  EXPECT_EQ(dtop_be, dtop);
  ref_->RouteToExpertSlots(chosen.data(), kRows, k, experts, capacity, slots.data(),
                           slot_a.data(), demand.data());
  std::vector<float> disp(slots_n * kCols), disp_be(slots_n * kCols), dx(kN), dx_be(kN),
      y(kN), y_be(kN), deo(slots_n * kCols), deo_be(slots_n * kCols), dg(kRows * k),
      dg_be(kRows * k);
  ref_->DispatchToSlots(x.data(), kCols, slot_a.data(), slots_n, k, disp.data());
  be_->DispatchToSlots(x.data(), kCols, slot_a.data(), slots_n, k, disp_be.data());
  EXPECT_EQ(disp_be, disp);
  ref_->DispatchToSlotsBackward(disp.data(), kCols, slots.data(), kRows, k, dx.data());
  be_->DispatchToSlotsBackward(disp.data(), kCols, slots.data(), kRows, k, dx_be.data());
  EXPECT_EQ(dx_be, dx);
  ref_->CombineFromSlots(disp.data(), kCols, slots.data(), gates.data(), kRows, k, y.data());
  be_->CombineFromSlots(disp.data(), kCols, slots.data(), gates.data(), kRows, k, y_be.data());
  EXPECT_EQ(y_be, y);
  ref_->CombineFromSlotsBackward(disp.data(), kCols, slots.data(), slot_a.data(), slots_n,
                                 gates.data(), kRows, k, dy.data(), deo.data(), dg.data());
  be_->CombineFromSlotsBackward(disp.data(), kCols, slots.data(), slot_a.data(), slots_n,
                                gates.data(), kRows, k, dy.data(), deo_be.data(), dg_be.data());
  EXPECT_EQ(deo_be, deo);
  EXPECT_EQ(dg_be, dg);
}

}  // namespace
}  // namespace tvlab
