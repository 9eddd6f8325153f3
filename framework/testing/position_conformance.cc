// Conformance for every position encoding linked into the test binary.
//
// A position encoding acts in up to three places (position_encoding.h). The
// properties below hold for every plugin, whichever hooks it overrides (an
// identity hook passes them trivially):
//   - AddToEmbeddings and RotateQueryOrKey keep shapes, and an offset
//     continues the sequence (a token at offset p is encoded as position p,
//     which is what a KV cache relies on);
//   - RotateQueryOrKey is a rotation: it preserves every vector's norm, and
//     q.k after RotateQuery at m and RotateKey at n (what attention applies;
//     xPos scales them) depends on m - n only (seed lesson 002: shifting
//     both positions by 1..20 moves the score by < 1e-6);
//   - LogitBias depends on the query-key offset only;
//   - gradients match finite differences, and every backend agrees.
// Absolute positions belong in AddToEmbeddings; the hooks inside attention
// are for relative schemes (RoPE, ALiBi, T5 bias).

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/testing/census.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// The seed's setting for the rotation checks: one head of size 16.
ModelDims SeedDims() {
  ModelDims d = SmallDims();
  d.d_model = 32, d.num_heads = 2, d.head_dim = 16;
  return d;
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

class PositionConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { pe_ = MakePositionEncoding(GetParam(), SmallDims()); }
  // The bias on logits of queries at [q_offset, q_offset + t) and keys at
  // [0, s), H = 2; undefined if the plugin adds none.
  Var Bias(int64_t q_offset, int64_t t, int64_t s) const { return pe_->LogitBias(2, q_offset, t, s); }
  std::unique_ptr<PositionEncoding> pe_;
};

TEST_P(PositionConformance, ShapesArePreserved) {
  EXPECT_EQ(pe_->AddToEmbeddings(RandomVar({2, 5, 8}, 1), 0).shape(), (Shape{2, 5, 8}));
  EXPECT_EQ(pe_->RotateQueryOrKey(RandomVar({2, 2, 5, 4}, 2), 0).shape(), (Shape{2, 2, 5, 4}));
  Var bias = Bias(0, 5, 7);
  if (bias.defined()) {
    EXPECT_EQ(bias.shape(), (Shape{1, 2, 5, 7}));
  }
}

TEST_P(PositionConformance, AnOffsetContinuesTheSequence) {
  // Tokens at positions [3, 6) encode as the tail of positions [0, 6).
  Tensor full = RandomTensor({1, 6, 8}, 3);
  Tensor tail = Tensor::Zeros({1, 3, 8});
  std::copy(full.data() + 24, full.data() + 48, tail.data());
  Tensor a = pe_->AddToEmbeddings(Var(full), 0).value();
  Tensor b = pe_->AddToEmbeddings(Var(tail), 3).value();
  for (int i = 0; i < 24; ++i) EXPECT_NEAR(a.data()[24 + i], b.data()[i], 1e-6) << i;
  // The same for queries and keys, one head (1, 1, T, hs).
  Tensor qk = RandomTensor({1, 1, 6, 4}, 4);
  Tensor qk_tail = Tensor::Zeros({1, 1, 3, 4});
  std::copy(qk.data() + 12, qk.data() + 24, qk_tail.data());
  Tensor c = pe_->RotateQueryOrKey(Var(qk), 0).value();
  Tensor d = pe_->RotateQueryOrKey(Var(qk_tail), 3).value();
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(c.data()[12 + i], d.data()[i], 1e-6) << i;
}

TEST_P(PositionConformance, RotationPreservesVectorNorms) {
  auto pe = MakePositionEncoding(GetParam(), SeedDims());
  Tensor x = RandomTensor({1, 2, 40, 16}, 5, -1.7f, 1.7f);  // positions 0..39 at offset 0
  for (int64_t offset : {0, 5, 1000}) {
    std::vector<float> y = pe->RotateQueryOrKey(Var(x), offset).value().ToVector();
    for (int row = 0; row < 80; ++row) {
      std::vector<float> in(x.data() + row * 16, x.data() + row * 16 + 16);
      std::vector<float> out(y.begin() + row * 16, y.begin() + row * 16 + 16);
      EXPECT_NEAR(std::sqrt(Dot(out, out)), std::sqrt(Dot(in, in)), 2e-6)
          << "row " << row << " at offset " << offset;
    }
  }
}

TEST_P(PositionConformance, RotatedScoresDependOnlyOnTheRelativeOffset) {
  // Seed lesson 002, exercise 2.3: d_head 16, q at m = 5 and k at n = 2, both
  // shifted by 1..20; the seed's PyTorch run reports a max error of 9.54e-07.
  auto pe = MakePositionEncoding(GetParam(), SeedDims());
  Var q(RandomTensor({1, 1, 1, 16}, 6, -1.7f, 1.7f)), k(RandomTensor({1, 1, 1, 16}, 7, -1.7f, 1.7f));
  auto score = [&](int64_t m, int64_t n) {
    return Dot(pe->RotateQuery(q, m).value().ToVector(), pe->RotateKey(k, n).value().ToVector());
  };
  const double base = score(5, 2);
  double max_error = 0.0;
  for (int64_t delta = 1; delta <= 20; ++delta)
    max_error = std::max(max_error, std::fabs(score(5 + delta, 2 + delta) - base));
  EXPECT_LT(max_error, 1e-6) << "score at (5, 2) = " << base;
  RecordProperty("max_shift_error", absl::StrCat(max_error));
  // Far along a long sequence too.
  EXPECT_NEAR(score(1005, 1002), base, 2e-6);
}

TEST_P(PositionConformance, LogitBiasDependsOnlyOnTheRelativeOffset) {
  // bias(query at q, key at j) = bias(query at q + d, key at j + d).
  Var near = Bias(0, 3, 5), far = Bias(4, 3, 9);
  ASSERT_EQ(near.defined(), far.defined());
  if (!near.defined()) return;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        EXPECT_NEAR(near.value().data()[(h * 3 + i) * 5 + j],
                    far.value().data()[(h * 3 + i) * 9 + j + 4], 1e-6)
            << "head " << h << " query " << i << " key " << j;
}

TEST_P(PositionConformance, GradientsMatchFiniteDifferences) {
  std::vector<Var> inputs = {RandomVar({2, 4, 8}, 4)};
  for (Var& p : ParameterVars(*pe_)) inputs.push_back(p);
  GradCheckResult r = GradCheck(
      [&](const std::vector<Var>& v) { return Project(pe_->AddToEmbeddings(v[0], 1)); }, inputs);
  EXPECT_TRUE(r.ok) << r.message;
  std::vector<Var> qk_inputs = {RandomVar({1, 2, 4, 4}, 5)};
  for (Var& p : ParameterVars(*pe_)) qk_inputs.push_back(p);
  GradCheckResult q = GradCheck(
      [&](const std::vector<Var>& v) { return Project(pe_->RotateQueryOrKey(v[0], 1)); },
      qk_inputs);
  EXPECT_TRUE(q.ok) << q.message;
  // A learned bias (T5 style) trains through LogitBias.
  std::vector<Var> params = ParameterVars(*pe_);
  if (Bias(1, 3, 5).defined() && !params.empty()) {
    GradCheckResult b = GradCheck(
        [&](const std::vector<Var>&) { return Project(Bias(1, 3, 5)); }, params);
    EXPECT_TRUE(b.ok) << b.message;
  }
}

// Every auxiliary loss the plugin declares has the gradient of its value,
// and every declared output is emitted, whichever hooks it acts in
// (plugin_test_util.h; a plugin declaring none passes trivially).
TEST_P(PositionConformance, AuxiliaryLossGradientsMatchFiniteDifferences) {
  auto forward = [&](const std::vector<Var>& v) {
    pe_->AddToEmbeddings(v[0], 0);                                         // (B, T, C)
    pe_->RotateQueryOrKey(Permute(Reshape(v[0], {2, 4, 2, 4}), {0, 2, 1, 3}), 0);  // (B, H, T, hs)
    Bias(0, 4, 4);
  };
  EXPECT_EQ(AuxiliaryOutputFailures(*pe_, forward, {RandomVar({2, 4, 8}, 6)}), "");
}

TEST_P(PositionConformance, DeterministicAndBackendIndependent) {
  Var x = RandomVar({2, 4, 8}, 6), qk = RandomVar({2, 2, 4, 4}, 7);
  Tensor want_x, want_qk, want_bias;
  {
    ScopedBackend ref("reference");
    want_x = pe_->AddToEmbeddings(x, 2).value();
    want_qk = pe_->RotateQueryOrKey(qk, 2).value();
    Var bias = Bias(2, 4, 6);
    if (bias.defined()) want_bias = bias.value();
  }
  for (const std::string& backend : HostBackends()) {
    ScopedBackend scoped(backend);
    EXPECT_LE(MaxAbsDiff(pe_->AddToEmbeddings(x, 2).value(), want_x), 1e-6f) << backend;
    EXPECT_LE(MaxAbsDiff(pe_->RotateQueryOrKey(qk, 2).value(), want_qk), 1e-6f) << backend;
    EXPECT_EQ(pe_->RotateQueryOrKey(qk, 2).value().ToVector(),
              pe_->RotateQueryOrKey(qk, 2).value().ToVector());
    if (want_bias.defined()) {
      EXPECT_LE(MaxAbsDiff(Bias(2, 4, 6).value(), want_bias), 1e-6f) << backend;
    }
  }
}

// What a plugin tells the fused attention kernel is true: declared fusable
// exactly when its capability says so, and the described bias is the one
// LogitBias returns (none, -slope_h * |q_offset + i - j|, or a bucketed
// table's entry table[RelativePositionBucket(j - q_offset - i, rule), h]).
TEST_P(PositionConformance, FusedBiasDescriptionIsTheLogitBias) {
  const uint32_t caps = PluginKindById("position").capabilities(GetParam());
  const PositionEncoding::FusedLogitBias fused = pe_->FusedLogitBiasFor(2);
  EXPECT_EQ((caps & kFusablePosition) != 0, fused.fusable)
      << "kFusablePosition must agree with FusedLogitBiasFor";
  if (!fused.fusable) return;
  const int64_t q_offset = 3, t = 4, s = 9;
  Var bias = Bias(q_offset, t, s);
  if (fused.bucket_table.defined()) {
    ASSERT_TRUE(bias.defined());
    ASSERT_TRUE(fused.alibi_slopes.empty()) << "one bias, not two";
    const std::vector<float> table = fused.bucket_table.value().ToVector();  // (buckets, H)
    ASSERT_EQ(fused.bucket_table.shape(), (Shape{fused.bucket_rule.num_buckets, 2}));
    const std::vector<float> got = bias.value().ToVector();  // (1, H, T, S)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < s; ++j)
          EXPECT_EQ(got[(h * t + i) * s + j],
                    table[RelativePositionBucket(j - q_offset - i, fused.bucket_rule) * 2 + h])
              << "head " << h << ", query " << i << ", key " << j;
    return;
  }
  if (fused.alibi_slopes.empty()) {
    EXPECT_FALSE(bias.defined()) << "declares no bias but LogitBias returns one";
    return;
  }
  ASSERT_EQ(fused.alibi_slopes.size(), 2u);
  ASSERT_TRUE(bias.defined());
  std::vector<float> got = bias.value().ToVector();  // (1, H, T, S)
  ASSERT_EQ(got.size(), static_cast<size_t>(2 * t * s));
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)
        EXPECT_NEAR(got[(h * t + i) * s + j],
                    -fused.alibi_slopes[h] * std::abs(q_offset + i - j), 1e-5)
            << "head " << h << ", query " << i << ", key " << j;
}

// A plugin that lets attention skip its rotation (token-major fused
// attention does, attend.h) declares no rotation and rotates nothing: its
// RotateQuery and RotateKey return their input bit for bit.
TEST_P(PositionConformance, LeavingQueriesAndKeysAloneMeansTheyAreLeftAlone) {
  if (!pe_->LeavesQueriesAndKeysAlone()) GTEST_SKIP() << GetParam() << " may rotate: attention always calls it";
  EXPECT_EQ(PluginKindById("position").capabilities(GetParam()) & kRotatesQueriesAndKeys, 0u);
  const Tensor x = RandomTensor({2, 2, 5, 4}, 9);
  for (int64_t offset : {0, 7}) {
    EXPECT_EQ(pe_->RotateQuery(Var(x), offset).value().ToVector(), x.ToVector()) << "offset " << offset;
    EXPECT_EQ(pe_->RotateKey(Var(x), offset).value().ToVector(), x.ToVector()) << "offset " << offset;
  }
}

// The token-major hooks (what attention calls on q and k as the
// projections write them, (B, T, H, hs)) turn exactly what the head-major
// ones turn: values and gradients equal bit for bit to permuting, rotating
// and permuting back, at offset 0 and further on. A plugin that says it
// rotates token-major rows must rotate at all.
TEST_P(PositionConformance, TokenMajorTurnsAreTheHeadMajorOnes) {
  if (pe_->RotatesTokenMajor()) {
    EXPECT_FALSE(pe_->LeavesQueriesAndKeysAlone());
  }
  const std::vector<int> swap = {0, 2, 1, 3};  // (B, T, H, hs) <-> (B, H, T, hs)
  const Tensor x = RandomTensor({2, 5, 2, 4}, 10), w = RandomTensor({2, 5, 2, 4}, 11);  // (B, T, H, hs)
  for (bool query : {true, false}) {
    for (int64_t offset : {0, 7}) {
      Var a(x.Clone(), /*requires_grad=*/true), b(x.Clone(), /*requires_grad=*/true);
      Var token_major = query ? pe_->RotateQueryTokenMajor(a, offset) : pe_->RotateKeyTokenMajor(a, offset);
      const Var b_head_major = Permute(b, swap);  // (B, H, T, hs)
      const Var head_major =
          Permute(query ? pe_->RotateQuery(b_head_major, offset) : pe_->RotateKey(b_head_major, offset), swap);
      Backward(Sum(Mul(token_major, Var(w))));
      Backward(Sum(Mul(head_major, Var(w))));
      const std::string where = absl::StrCat(query ? "query" : "key", " at offset ", offset);
      EXPECT_EQ(token_major.shape(), x.shape()) << where;
      EXPECT_EQ(token_major.value().ToVector(), head_major.value().ToVector()) << where;
      EXPECT_EQ(a.grad().ToVector(), b.grad().ToVector()) << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, PositionConformance,
                         ::testing::ValuesIn(PluginsUnderTest("position")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tvlab
