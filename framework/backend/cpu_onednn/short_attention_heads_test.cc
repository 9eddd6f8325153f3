// The heads-in-lanes short attention kernel's builds (AVX-512:
// short_attention_heads_avx512.h; AVX2: short_attention_heads_avx2.h)
// against the portable short kernel (short_attention.h), forward and
// backward, in both q/k/v layouts (the portable kernel takes head-major
// rows; token-major operands are permuted for it and its results permuted
// back): the sort model's shape with dropout, a partial block (20 heads),
// grouped heads with a causal mask and sinks, 16 keys, head sizes past a
// multiple of 16, a window, more queries than keys; a backward after
// forwards with another dropout stream. The two builds bit for bit where
// both run, and which calls each takes. A build the CPU lacks (or
// ONEDNN_MAX_CPU_ISA caps away) is skipped.

#include <cmath>
#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_avx512.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx2.h"
#include "framework/backend/cpu_onednn/short_attention_heads_avx512.h"
#include "framework/backend/cpu_onednn/short_attention_testing.h"
#include "framework/backend/cpu_onednn/test_values.h"
#include "framework/core/cpu_features.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::ExpectWithinRounding;
using onednn_testing::ShortDesc;
using onednn_testing::Values;

using Case = onednn_testing::ShortCase;

std::vector<Case> Cases() {
  std::vector<Case> cases;
  FusedAttentionDesc d = ShortDesc(64, 4, 4, 8, 8, 16, 16);
  d.dropout = 0.1f, d.dropout_stream = RngStream(7, RngPurpose::kDropout, 3);
  cases.push_back({"the sort model's shape, dropout", d});
  d = ShortDesc(5, 4, 4, 8, 8, 16, 16);
  cases.push_back({"20 heads: one block and a partial one", d});
  d = ShortDesc(6, 8, 2, 11, 11, 16, 16);
  d.mask.causal = true;
  d.sink_logits = {0.5f, -1.0f, 0.0f, 2.0f, 1.0f, -0.5f, 0.25f, 3.0f};
  d.dropout = 0.2f, d.dropout_stream = RngStream(8, RngPurpose::kDropout, 1);
  cases.push_back({"gqa, causal, sinks, dropout", d});
  d = ShortDesc(4, 4, 1, 16, 16, 32, 32);
  d.mask.causal = true, d.mask.window = 3;
  cases.push_back({"mqa, 16 keys, causal window 3", d});
  d = ShortDesc(3, 6, 3, 5, 5, 20, 40);
  d.dropout = 0.1f, d.dropout_stream = RngStream(10, RngPurpose::kDropout, 4);
  cases.push_back({"5 keys, head sizes 20 and 40, dropout", d});
  d = ShortDesc(2, 8, 8, 37, 13, 24, 8);
  cases.push_back({"37 queries against 13 keys, head sizes 24 and 8", d});
  return cases;
}

// (B, heads, rows, width) <-> (B, rows, heads, width).
std::vector<float> Permuted(const std::vector<float>& x, int64_t b, int64_t heads, int64_t rows, int64_t width,
                            bool to_token_major) {
  std::vector<float> y(x.size());
  for (int64_t n = 0; n < b; ++n)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t e = 0; e < width; ++e) {
          const int64_t head_major = ((n * heads + h) * rows + r) * width + e;
          const int64_t token_major = ((n * rows + r) * heads + h) * width + e;
          if (to_token_major)
            y[token_major] = x[head_major];
          else
            y[head_major] = x[token_major];
        }
  return y;
}

struct Operands {
  std::vector<float> q, k, v, dout;
};

// One build of the kernel: whether this CPU runs it, the calls it takes,
// and its forward and backward.
struct Build {
  std::string name;
  bool available;
  std::function<bool(const FusedAttentionDesc&)> takes;
  decltype(&onednn::HeadsInLanesForward) forward;
  decltype(&onednn::HeadsInLanesBackward) backward;
};

Build Avx512Build() {
  return {"AVX-512", onednn::ShortAttentionAvx512Available(), onednn::HeadsInLanesTakes, onednn::HeadsInLanesForward,
          onednn::HeadsInLanesBackward};
}
Build Avx2Build() {
  return {"AVX2", CpuHasAvx2Fma(), onednn::HeadsInLanesAvx2Takes, onednn::HeadsInLanesForwardAvx2,
          onednn::HeadsInLanesBackwardAvx2};
}

class ShortAttentionHeads : public ::testing::TestWithParam<bool> {  // true: AVX-512, false: AVX2
 protected:
  void SetUp() override {
    if (!build().available) GTEST_SKIP() << "no " << build().name << " here (or capped below it)";
  }
  Build build() const { return GetParam() ? Avx512Build() : Avx2Build(); }
};

// Every output of forward then backward (q, k, v, dout head-major; the
// call's layout `token_major`), head-major: out, lse, dq, dk, dv.
std::vector<std::vector<float>> RunBuild(const Build& build, FusedAttentionDesc d, const Operands& x,
                                         const std::vector<float>& lse_for_backward, bool token_major) {
  const int64_t b = d.batch, h = d.heads, g = d.kv_heads, t = d.queries, s = d.keys;
  d.token_major = token_major;
  auto in = [&](const std::vector<float>& y, int64_t heads, int64_t n, int64_t width) {
    return token_major ? Permuted(y, b, heads, n, width, true) : y;
  };
  auto back = [&](const std::vector<float>& y, int64_t heads, int64_t n, int64_t width) {
    return token_major ? Permuted(y, b, heads, n, width, false) : y;
  };
  const auto q = in(x.q, h, t, d.head_dim), k = in(x.k, g, s, d.head_dim), v = in(x.v, g, s, d.value_dim);
  const auto dout = in(x.dout, h, t, d.value_dim);
  std::vector<float> out(b * h * t * d.value_dim, NAN), lse(b * h * t, NAN);  // every one written
  std::vector<float> dq(x.q.size(), NAN), dk(x.k.size(), NAN), dv(x.v.size(), NAN);
  build.forward(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  build.backward(d, q.data(), k.data(), v.data(), out.data(), lse_for_backward.data(), dout.data(), dq.data(),
                 dk.data(), dv.data());
  return {back(out, h, t, d.value_dim), lse, back(dq, h, t, d.head_dim), back(dk, g, s, d.head_dim),
          back(dv, g, s, d.value_dim)};
}

Operands OperandsFor(const FusedAttentionDesc& d) {
  const int64_t rows = d.batch * d.heads * d.queries, kv_rows = d.batch * d.kv_heads * d.keys;
  return {Values(rows * d.head_dim, 1), Values(kv_rows * d.head_dim, 2), Values(kv_rows * d.value_dim, 3),
          Values(rows * d.value_dim, 4)};
}

void CheckAgainstPortable(const Build& build, const Case& c, bool token_major) {
  const FusedAttentionDesc& d = c.d;
  const std::string name = build.name + ", " + c.name + (token_major ? " (token-major)" : " (head-major)");
  ASSERT_TRUE(IsShortAttention(d) && build.takes(d)) << name;
  const Operands x = OperandsFor(d);
  std::vector<float> out(x.dout.size()), lse(d.batch * d.heads * d.queries), dq(x.q.size()), dk(x.k.size()),
      dv(x.v.size());
  PortableShortAttentionForward(d, x.q.data(), x.k.data(), x.v.data(), out.data(), lse.data());
  PortableShortAttentionBackward(d, x.q.data(), x.k.data(), x.v.data(), out.data(), lse.data(), x.dout.data(),
                                 dq.data(), dk.data(), dv.data());
  const auto got = RunBuild(build, d, x, lse, token_major);
  ExpectWithinRounding(got[0], out, name + ": out");
  ExpectWithinRounding(got[1], lse, name + ": lse");
  ExpectWithinRounding(got[2], dq, name + ": dq");
  ExpectWithinRounding(got[3], dk, name + ": dk");
  ExpectWithinRounding(got[4], dv, name + ": dv");
}

TEST_P(ShortAttentionHeads, AgreesWithThePortableKernelInBothLayouts) {
  for (const Case& c : Cases()) {
    CheckAgainstPortable(build(), c, /*token_major=*/false);
    CheckAgainstPortable(build(), c, /*token_major=*/true);
  }
}

// The AVX2 build runs the AVX-512 build's operations lane by lane (its exp's
// scalef as two exact multiplies, its log's getmant and getexp from the
// bits): every output the same to the bit, in both layouts.
TEST(ShortAttentionHeadsBuilds, Avx2GivesTheAvx512BuildsBits) {
  if (!Avx512Build().available || !Avx2Build().available) GTEST_SKIP() << "needs both AVX-512F and AVX2 with FMA";
  const char* outputs[] = {"out", "lse", "dq", "dk", "dv"};
  for (const Case& c : Cases())
    for (const bool token_major : {false, true}) {
      const Operands x = OperandsFor(c.d);
      std::vector<float> lse(c.d.batch * c.d.heads * c.d.queries);
      std::vector<float> out(x.dout.size());
      PortableShortAttentionForward(c.d, x.q.data(), x.k.data(), x.v.data(), out.data(), lse.data());
      const auto wide = RunBuild(Avx512Build(), c.d, x, lse, token_major);
      const auto narrow = RunBuild(Avx2Build(), c.d, x, lse, token_major);
      for (int o = 0; o < 5; ++o)
        EXPECT_EQ(0, std::memcmp(wide[o].data(), narrow[o].data(), wide[o].size() * sizeof(float)))
            << c.name << (token_major ? " (token-major): " : " (head-major): ") << outputs[o];
    }
}

// Seeded random calls both builds take (at least 16 heads, groups of 1-8
// query heads, 1-20 queries, 1-16 keys, head sizes 1-40, causal windows,
// sinks, dropout; both layouts): the AVX2 build's every output is the
// AVX-512 build's to the bit, and within rounding of the portable kernel.
TEST(ShortAttentionHeadsBuilds, RandomCallsAgree) {
  if (!Avx512Build().available || !Avx2Build().available) GTEST_SKIP() << "needs both AVX-512F and AVX2 with FMA";
  std::mt19937 random(20261207);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(random); };
  const char* outputs[] = {"out", "lse", "dq", "dk", "dv"};
  for (int call = 0; call < 40; ++call) {
    const int64_t h = int64_t{1} << uniform(0, 4), b = std::max<int64_t>(uniform(1, 6), (16 + h - 1) / h);
    const int64_t g = h / std::min<int64_t>(h, int64_t{1} << uniform(0, 3));  // groups of at most 8
    const int64_t s = uniform(1, 16), t = uniform(0, 1) == 1 ? s : uniform(1, 20);
    FusedAttentionDesc d = ShortDesc(b, h, g, t, s, uniform(1, 40), uniform(1, 40));
    if (t == s && uniform(0, 1) == 1) d.mask.causal = true, d.mask.window = uniform(0, 1) == 1 ? uniform(1, 4) : 0;
    if (uniform(0, 2) == 0)
      for (int64_t i = 0; i < h; ++i) d.sink_logits.push_back(0.25f * static_cast<float>(uniform(-8, 8)));
    if (uniform(0, 1) == 1) d.dropout = 0.2f, d.dropout_stream = RngStream(11, RngPurpose::kDropout, call);
    const std::string name = "call " + std::to_string(call) + ": " + std::to_string(b) + " x " + std::to_string(h) +
                             "/" + std::to_string(g) + " heads, " + std::to_string(t) + " x " + std::to_string(s);
    ASSERT_TRUE(Avx512Build().takes(d) && Avx2Build().takes(d)) << name;
    const bool token_major = uniform(0, 1) == 1;
    CheckAgainstPortable(Avx2Build(), Case{name, d}, token_major);
    const Operands x = OperandsFor(d);
    std::vector<float> out(x.dout.size()), lse(b * h * t);
    PortableShortAttentionForward(d, x.q.data(), x.k.data(), x.v.data(), out.data(), lse.data());
    const auto wide = RunBuild(Avx512Build(), d, x, lse, token_major);
    const auto narrow = RunBuild(Avx2Build(), d, x, lse, token_major);
    for (int o = 0; o < 5; ++o)
      ASSERT_EQ(0, std::memcmp(wide[o].data(), narrow[o].data(), wide[o].size() * sizeof(float)))
          << name << ": " << outputs[o];
  }
}

// The backward finds the factors its forward drew (KeptTask), and only
// those: after forwards with one stream, a backward with the next step's
// stream, or another probability, is that stream's.
TEST_P(ShortAttentionHeads, TheBackwardsDropoutIsItsOwnStreams) {
  FusedAttentionDesc d = Cases()[0].d;
  const int64_t n = d.batch * d.heads * d.queries * d.head_dim, rows = n / d.head_dim;
  const auto q = Values(n, 11), k = Values(n, 12), v = Values(n, 13), dout = Values(n, 14);
  std::vector<float> out(n), lse(rows), scratch_out(n), scratch_lse(rows);
  for (const auto& [step, p] : {std::pair<uint64_t, float>{4, 0.1f}, {5, 0.1f}, {4, 0.3f}}) {
    FusedAttentionDesc first = d;  // what the forwards before ran with
    first.dropout_stream = RngStream(7, RngPurpose::kDropout, 3);
    build().forward(first, q.data(), k.data(), v.data(), scratch_out.data(), scratch_lse.data());
    d.dropout_stream = RngStream(7, RngPurpose::kDropout, step), d.dropout = p;
    PortableShortAttentionForward(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    std::vector<float> dq(n), dk(n), dv(n), dq2(n), dk2(n), dv2(n);
    PortableShortAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq.data(),
                                   dk.data(), dv.data());
    build().backward(d, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(), dq2.data(), dk2.data(),
                     dv2.data());
    const std::string name = "step " + std::to_string(step) + ", p " + std::to_string(p);
    ExpectWithinRounding(dq2, dq, name + ": dq");
    ExpectWithinRounding(dv2, dv, name + ": dv");
  }
}

TEST(ShortAttentionHeadsBuilds, TakeManyHeadsWithBatchIndependentMasks) {
  FusedAttentionDesc d = ShortDesc(64, 4, 4, 8, 8, 16, 16);
  EXPECT_TRUE(onednn::HeadsInLanesTakes(d));
  EXPECT_FALSE(onednn::HeadsInLanesTakes(ShortDesc(3, 4, 4, 8, 8, 16, 16))) << "12 heads: less than a block";
  EXPECT_FALSE(onednn::HeadsInLanesTakes(ShortDesc(16, 6, 2, 8, 8, 16, 16))) << "groups of 3 across blocks";
  EXPECT_FALSE(onednn::HeadsInLanesTakes(ShortDesc(16, 4, 4, 8, 8, 80, 16))) << "head size past 64";
  EXPECT_FALSE(onednn::HeadsInLanesTakes(ShortDesc(16, 4, 4, 65, 8, 16, 16))) << "65 queries";
  d.mask.key_lengths.assign(64, 5);
  EXPECT_FALSE(onednn::HeadsInLanesTakes(d)) << "key lengths differ by batch row";
  if (!CpuHasAvx2Fma()) return;  // the AVX2 build takes nothing there
  EXPECT_TRUE(onednn::HeadsInLanesAvx2Takes(ShortDesc(64, 4, 4, 8, 8, 16, 16)));
  EXPECT_TRUE(onednn::HeadsInLanesAvx2Takes(ShortDesc(3, 4, 4, 8, 8, 16, 16))) << "12 heads: a block and a part";
  EXPECT_FALSE(onednn::HeadsInLanesAvx2Takes(ShortDesc(1, 4, 4, 8, 8, 16, 16))) << "4 heads: less than a block";
  EXPECT_TRUE(onednn::HeadsInLanesAvx2Takes(ShortDesc(16, 8, 1, 8, 8, 16, 16))) << "a group of 8: one block";
  EXPECT_FALSE(onednn::HeadsInLanesAvx2Takes(ShortDesc(16, 16, 1, 8, 8, 16, 16))) << "a group of 16 across blocks";
  EXPECT_FALSE(onednn::HeadsInLanesAvx2Takes(ShortDesc(16, 4, 4, 8, 17, 16, 16))) << "17 keys: not short";
  EXPECT_FALSE(onednn::HeadsInLanesAvx2Takes(d)) << "key lengths differ by batch row";
}

// The AVX-512 entry sends what HeadsInLanesTakes takes here: the same bits.
TEST(ShortAttentionHeadsAvx512, IsWhatTheAvx512EntryRunsForManyHeads) {
  if (!onednn::ShortAttentionAvx512Available()) GTEST_SKIP() << "no AVX-512F";
  const FusedAttentionDesc d = Cases()[0].d;
  const int64_t n = d.batch * d.heads * d.queries * d.head_dim;
  const auto q = Values(n, 5), k = Values(n, 6), v = Values(n, 7);
  std::vector<float> out(n), lse(n / d.head_dim), out2(n), lse2(lse.size());
  onednn::ShortAttentionForwardAvx512(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  onednn::HeadsInLanesForward(d, q.data(), k.data(), v.data(), out2.data(), lse2.data());
  EXPECT_EQ(out, out2);
  EXPECT_EQ(lse, lse2);
}

INSTANTIATE_TEST_SUITE_P(Builds, ShortAttentionHeads, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Avx512" : "Avx2"; });

}  // namespace
}  // namespace tvlab
