// The AVX-512 tiled attention kernel (tiled_attention_avx512.h): which
// calls it takes; the same bits at one and two threads (its tasks are whole
// heads); and, past the conformance suite's short rows, a long window and
// a key range spanning many column panels against the sgemm kernel
// (tiled_attention.h), forward and backward, with and without dropout.
// Both against the reference:
// the fused attention conformance suite. Skipped without AVX-512F.

#include "framework/backend/cpu_onednn/tiled_attention_avx512.h"

#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/backend/cpu_onednn/test_values.h"
#include "framework/backend/cpu_onednn/tiled_attention.h"
#include "framework/core/cpu_features.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

FusedAttentionDesc Desc(int64_t b, int64_t h, int64_t g, int64_t t, int64_t s, int64_t hs) {
  FusedAttentionDesc d;
  d.batch = b, d.heads = h, d.kv_heads = g, d.queries = t, d.keys = s, d.head_dim = d.value_dim = hs;
  d.scale = 1.0f / std::sqrt(static_cast<float>(hs));
  return d;
}

struct Results {
  std::vector<float> out, lse, dq, dk, dv;
};

// Forward and backward of `d` (outputs start as garbage, 7) with the
// AVX-512 kernel, or with the sgemm kernel when `sgemm`.
Results RunKernel(const FusedAttentionDesc& d, bool sgemm) {
  const int64_t nq = d.batch * d.heads * d.queries * d.head_dim;
  const int64_t nk = d.batch * d.kv_heads * d.keys * d.head_dim;
  const std::vector<float> q = Values(nq, 1), k = Values(nk, 2), v = Values(nk, 3), dout = Values(nq, 4);
  Results r{std::vector<float>(nq, 7.0f), std::vector<float>(d.batch * d.heads * d.queries, 7.0f),
            std::vector<float>(nq, 7.0f), std::vector<float>(nk, 7.0f), std::vector<float>(nk, 7.0f)};
  if (sgemm) {
    TiledAttentionForward(d, q.data(), k.data(), v.data(), r.out.data(), r.lse.data());
    TiledAttentionBackward(d, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(), dout.data(), r.dq.data(),
                           r.dk.data(), r.dv.data(), nullptr);
  } else {
    onednn::TiledAttentionForwardAvx512(d, q.data(), k.data(), v.data(), r.out.data(), r.lse.data());
    onednn::TiledAttentionBackwardAvx512(d, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(), dout.data(),
                                         r.dq.data(), r.dk.data(), r.dv.data());
  }
  return r;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

// The two kernels' results agree within rounding (another order of sums).
void ExpectNearResults(const Results& got, const Results& want, const std::string& name) {
  ExpectNear(got.out, want.out, 1e-5f, name + ": out");
  ExpectNear(got.lse, want.lse, 1e-5f, name + ": lse");
  ExpectNear(got.dq, want.dq, 2e-5f, name + ": dq");
  ExpectNear(got.dk, want.dk, 2e-5f, name + ": dk");
  ExpectNear(got.dv, want.dv, 2e-5f, name + ": dv");
}

class TiledAttentionAvx512 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CpuHasAvx512f()) GTEST_SKIP() << "no AVX-512F on this CPU";
  }
};

TEST_F(TiledAttentionAvx512, TakesPlainAttentionOnly) {
  FusedAttentionDesc d = Desc(16, 8, 8, 256, 256, 32);  // the GPT config's
  d.mask.causal = true;
  d.token_major = true;
  EXPECT_TRUE(onednn::TiledAttentionAvx512Takes(d));
  EXPECT_TRUE(onednn::TiledAttentionAvx512TakesBackward(d));
  // What it computes, but cpu_onednn leaves to the sgemm kernel (slower here).
  auto left = [&](auto change, const char* what) {
    FusedAttentionDesc e = d;
    change(e);
    EXPECT_TRUE(onednn::TiledAttentionAvx512Computes(e)) << what;
    EXPECT_FALSE(onednn::TiledAttentionAvx512Takes(e)) << what;
  };
  left([](FusedAttentionDesc& e) { e.keys = onednn::kTiledAvx512MaxPanel / 32 + 1; }, "too many keys");
  left([](FusedAttentionDesc& e) { e.queries = 1, e.mask.causal_offset = 255; }, "one query (decoding)");
  // What it does not compute.
  auto refused = [&](auto change, const char* what) {
    FusedAttentionDesc e = d;
    change(e);
    EXPECT_FALSE(onednn::TiledAttentionAvx512Computes(e)) << what;
    EXPECT_FALSE(onednn::TiledAttentionAvx512Takes(e)) << what;
  };
  refused([](FusedAttentionDesc& e) { e.head_dim = e.value_dim = 40; }, "head size 40");
  refused([](FusedAttentionDesc& e) { e.value_dim = 16; }, "value size 16 against head size 32");
  refused([](FusedAttentionDesc& e) { e.alibi_slopes.assign(8, 0.5); }, "ALiBi");
  refused([](FusedAttentionDesc& e) { e.logit_softcap = 30.0f; }, "soft-cap");
  refused([](FusedAttentionDesc& e) { e.sink_logits.assign(8, 0.0f); }, "sinks");
  refused([](FusedAttentionDesc& e) { e.precision = Precision::kBf16; }, "bf16");
  FusedAttentionDesc dropped = d;
  dropped.dropout = 0.1f;
  dropped.dropout_stream = RngStream(1, RngPurpose::kDropout, 1);
  EXPECT_TRUE(onednn::TiledAttentionAvx512Takes(dropped)) << "dropout";
  EXPECT_TRUE(onednn::TiledAttentionAvx512TakesBackward(dropped)) << "dropout";
  // One key/value head at batch 1 on two threads: the backward is the
  // sgemm kernel's, which splits the keys.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  FusedAttentionDesc mqa = Desc(1, 8, 1, 1024, 1024, 32);
  mqa.mask.causal = true;
  EXPECT_TRUE(onednn::TiledAttentionAvx512Takes(mqa));
  EXPECT_FALSE(onednn::TiledAttentionAvx512TakesBackward(mqa));
  omp_set_num_threads(threads);
}

TEST_F(TiledAttentionAvx512, SameBitsAtOneAndTwoThreads) {
  FusedAttentionDesc d = Desc(4, 4, 2, 300, 300, 32);  // above the threading threshold
  d.mask.causal = true;
  d.token_major = true;
  FusedAttentionDesc dropped = d;
  dropped.dropout = 0.1f;
  dropped.dropout_stream = RngStream(4, RngPurpose::kDropout, 9);
  for (const FusedAttentionDesc& e : {d, dropped}) {
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const Results one = RunKernel(e, false);
    omp_set_num_threads(2);
    const Results two = RunKernel(e, false);
    omp_set_num_threads(threads);
    const std::string name = e.dropout > 0.0f ? "dropout" : "no dropout";
    EXPECT_EQ(one.out, two.out) << name;
    EXPECT_EQ(one.lse, two.lse) << name;
    EXPECT_EQ(one.dq, two.dq) << name;
    EXPECT_EQ(one.dk, two.dk) << name;
    EXPECT_EQ(one.dv, two.dv) << name;
  }
}

// Dropout draws the sgemm kernel's factors (which the conformance suite
// checks against the reference's DropoutMask): with a GQA window across
// many query blocks, key padding and a cache offset. The outputs differ
// from the same call without dropout, so a mask the kernel ignored fails.
TEST_F(TiledAttentionAvx512, DropoutAsTheSgemmKernel) {
  FusedAttentionDesc window = Desc(2, 4, 2, 300, 300, 64);
  window.mask.causal = true;
  window.mask.window = 100;
  window.token_major = true;
  FusedAttentionDesc cached = Desc(2, 2, 1, 70, 500, 16);
  cached.mask.causal = true;
  cached.mask.causal_offset = 430;
  cached.mask.key_lengths = {500, 333};
  for (FusedAttentionDesc d : {window, cached}) {
    const Results plain = RunKernel(d, false);
    d.dropout = 0.2f;
    d.dropout_stream = RngStream(11, RngPurpose::kDropout, 3);
    const Results got = RunKernel(d, false), want = RunKernel(d, true);
    const std::string name = "keys " + std::to_string(d.keys);
    ExpectNearResults(got, want, name);
    EXPECT_EQ(got.lse, plain.lse) << name << ": lse is of the weights before dropout";
    EXPECT_NE(got.out, plain.out) << name;
    EXPECT_NE(got.dq, plain.dq) << name;
  }
}

TEST_F(TiledAttentionAvx512, LongRowsAsTheSgemmKernel) {
  FusedAttentionDesc window = Desc(1, 4, 2, 700, 700, 64);
  window.mask.causal = true;
  window.mask.window = 300;
  FusedAttentionDesc wide = Desc(2, 2, 2, 70, 1500, 16);  // a cache: 1,430 keys before the queries
  wide.mask.causal = true;
  wide.mask.causal_offset = 1430;
  wide.mask.key_lengths = {1500, 1000};
  for (const FusedAttentionDesc& d : {window, wide}) {
    const Results got = RunKernel(d, false), want = RunKernel(d, true);
    const std::string name = "keys " + std::to_string(d.keys);
    ExpectNearResults(got, want, name);
  }
}

}  // namespace
}  // namespace tvlab
