// Fused attention with token_major q, k, v and out (fused_attention.h): the
// reference computes the same bits in either layout, and every backend
// that prefers token-major calls (Backend::PrefersTokenMajorFusedAttention:
// cpu_onednn's AVX-512 short kernel, and its tiled kernels from 64 x 64
// query-key pairs on) matches the reference's head-major results, permuted,
// forward and backward. Backends that prefer none skip.

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/backend_conformance_util.h"
#include "framework/backend/backend_registry.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using conformance::BackendsToCompare;
using conformance::Dev;
using conformance::ExpectClose;
using conformance::Random;

struct Case {
  std::string name;
  FusedAttentionDesc d;
};

FusedAttentionDesc Desc(int64_t b, int64_t h, int64_t g, int64_t t, int64_t s, int64_t hs, int64_t hv) {
  FusedAttentionDesc d;
  d.batch = b, d.heads = h, d.kv_heads = g, d.queries = t, d.keys = s, d.head_dim = hs, d.value_dim = hv;
  d.scale = 0.25f;
  return d;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  FusedAttentionDesc d = Desc(4, 4, 4, 8, 8, 16, 16);
  d.dropout = 0.1f, d.dropout_stream = RngStream(7, RngPurpose::kDropout, 3);
  cases.push_back({"the sort model's shape, dropout", d});
  d = Desc(3, 4, 2, 11, 11, 16, 24);
  d.mask.causal = true, d.mask.key_lengths = {11, 0, 6};
  d.dropout = 0.2f, d.dropout_stream = RngStream(8, RngPurpose::kDropout, 1);
  cases.push_back({"gqa, causal, a row without keys, dropout, value size 24", d});
  cases.push_back({"mqa, 3 queries against 16 keys, head size 40", Desc(2, 4, 1, 3, 16, 40, 40)});
  // Longer rows: cpu_onednn's tiled kernel (two query tiles of 64 rows).
  d = Desc(3, 4, 2, 80, 80, 16, 24);
  d.mask.causal = true, d.mask.key_lengths = {80, 0, 37};
  d.dropout = 0.1f, d.dropout_stream = RngStream(9, RngPurpose::kDropout, 2);
  cases.push_back({"gqa, causal 80 x 80, a row without keys, dropout, value size 24", d});
  d = Desc(2, 4, 4, 70, 90, 32, 32);
  d.alibi_slopes = {0.5, 0.25, 0.125, 0.0625}, d.alibi_offset = 20;
  d.logit_softcap = 5.0f, d.sink_logits = {0.1f, -0.2f, 0.3f, 0.0f};
  cases.push_back({"mha, 70 x 90, ALiBi, soft-cap, sinks", d});
  // Plain attention at head size 32: cpu_onednn's AVX-512 tiled kernel
  // where the CPU has AVX-512F (four query blocks, the last of 4 rows).
  d = Desc(3, 4, 2, 100, 100, 32, 32);
  d.mask.causal = true, d.mask.key_lengths = {100, 0, 57};
  cases.push_back({"gqa, causal 100 x 100, a row without keys, head size 32", d});
  d = Desc(2, 4, 2, 40, 300, 16, 16);  // two key tiles of 256
  d.mask.window = 280;
  cases.push_back({"gqa, 40 queries against 300 keys, a window", d});
  return cases;
}

// x (B, N, L, w) -> (B, L, N, w), or back with `back`.
std::vector<float> SwapMiddle(const std::vector<float>& x, int64_t b, int64_t n, int64_t l, int64_t w, bool back) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t a = 0; a < n; ++a)
      for (int64_t c = 0; c < l; ++c)
        for (int64_t e = 0; e < w; ++e) {
          const int64_t head_major = ((i * n + a) * l + c) * w + e, token_major = ((i * l + c) * n + a) * w + e;
          if (back) {
            y[head_major] = x[token_major];
          } else {
            y[token_major] = x[head_major];
          }
        }
  return y;
}

struct Results {
  std::vector<float> out, lse, dq, dk, dv;
};

// One forward and backward of `d` on `be` over head-major inputs (permuted
// in and the results back when d.token_major): head-major results.
Results RunOn(Backend& be, const FusedAttentionDesc& d) {
  const int64_t b = d.batch, h = d.heads, g = d.kv_heads, t = d.queries, s = d.keys;
  const int64_t hs = d.head_dim, hv = d.value_dim;
  std::vector<float> q = Random(b * h * t * hs, 1), k = Random(b * g * s * hs, 2);
  std::vector<float> v = Random(b * g * s * hv, 3), dout = Random(b * h * t * hv, 4);
  const bool tm = d.token_major;
  if (tm) {
    q = SwapMiddle(q, b, h, t, hs, false), k = SwapMiddle(k, b, g, s, hs, false);
    v = SwapMiddle(v, b, g, s, hv, false), dout = SwapMiddle(dout, b, h, t, hv, false);
  }
  const Device on = be.device();
  Dev bq(on, q), bk(on, k), bv(on, v), bdout(on, dout);
  Dev out(on, std::vector<float>(dout.size(), 7.0f)), lse(on, std::vector<float>(b * h * t, 7.0f));
  Dev dq(on, std::vector<float>(q.size(), 7.0f)), dk(on, std::vector<float>(k.size(), 7.0f));
  Dev dv(on, std::vector<float>(v.size(), 7.0f));
  be.FusedAttention(d, bq.p(), bk.p(), bv.p(), out.p(), lse.p());
  be.FusedAttentionBackward(d, bq.p(), bk.p(), bv.p(), out.p(), lse.p(), bdout.p(), dq.p(), dk.p(), dv.p(), nullptr);
  Results r{out.host(), lse.host(), dq.host(), dk.host(), dv.host()};
  if (tm) {
    r.out = SwapMiddle(r.out, b, h, t, hv, true), r.dq = SwapMiddle(r.dq, b, h, t, hs, true);
    r.dk = SwapMiddle(r.dk, b, g, s, hs, true), r.dv = SwapMiddle(r.dv, b, g, s, hv, true);
  }
  return r;
}

FusedAttentionDesc TokenMajor(FusedAttentionDesc d) {
  d.token_major = true;
  return d;
}

TEST(FusedAttentionTokenMajor, TheReferenceComputesTheSameBitsInEitherLayout) {
  auto ref = std::move(*MakeBackend("reference"));
  for (const Case& c : Cases()) {
    const Results head = RunOn(*ref, c.d), token = RunOn(*ref, TokenMajor(c.d));
    EXPECT_EQ(head.out, token.out) << c.name;
    EXPECT_EQ(head.lse, token.lse) << c.name;
    EXPECT_EQ(head.dq, token.dq) << c.name;
    EXPECT_EQ(head.dk, token.dk) << c.name;
    EXPECT_EQ(head.dv, token.dv) << c.name;
  }
}

class FusedAttentionTokenMajorConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedAttentionTokenMajorConformance, MatchesTheReferencesHeadMajorResults) {
  auto made = MakeBackend(GetParam());
  if (!made.ok()) GTEST_SKIP() << made.status().message();  // e.g. gpu_cuda without a GPU
  auto ref = std::move(*MakeBackend("reference"));
  int ran = 0;
  for (const Case& c : Cases()) {
    const FusedAttentionDesc d = TokenMajor(c.d);
    if (!(*made)->PrefersTokenMajorFusedAttention(d)) continue;
    const Results want = RunOn(*ref, c.d), got = RunOn(**made, d);
    ExpectClose(got.out, want.out, 1e-5f, c.name + ": out");
    ExpectClose(got.lse, want.lse, 1e-5f, c.name + ": lse");
    ExpectClose(got.dq, want.dq, 2e-5f, c.name + ": dq");
    ExpectClose(got.dk, want.dk, 2e-5f, c.name + ": dk");
    ExpectClose(got.dv, want.dv, 2e-5f, c.name + ": dv");
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << GetParam() << " prefers no token-major call here";
}

INSTANTIATE_TEST_SUITE_P(AllBackends, FusedAttentionTokenMajorConformance,
                         ::testing::ValuesIn(BackendsToCompare()));

}  // namespace
}  // namespace tvlab
