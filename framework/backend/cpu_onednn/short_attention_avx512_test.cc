// The AVX-512 short attention kernel (short_attention_avx512.h) against the
// portable one (short_attention.h), forward and backward, on the cases the
// two must agree on within rounding: the sort model's shape with dropout,
// grouped heads with a causal mask, a batch row without keys and sinks, one
// query against 16 keys, rows past a multiple of eight with head sizes
// past a multiple of 16, a window, five keys with head sizes 20 and 40. Both against the reference: the fused
// attention conformance suite. Skipped without AVX-512F.

#include "framework/backend/cpu_onednn/short_attention_avx512.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/short_attention_testing.h"
#include "framework/backend/cpu_onednn/test_values.h"
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
  FusedAttentionDesc d = ShortDesc(4, 4, 4, 8, 8, 16, 16);
  d.dropout = 0.1f, d.dropout_stream = RngStream(7, RngPurpose::kDropout, 3);
  cases.push_back({"the sort model's shape, dropout", d});
  d = ShortDesc(3, 4, 2, 11, 11, 16, 16);
  d.mask.causal = true, d.mask.key_lengths = {11, 0, 6};
  d.sink_logits = {0.5f, -1.0f, 0.0f, 2.0f};
  d.dropout = 0.2f, d.dropout_stream = RngStream(8, RngPurpose::kDropout, 1);
  cases.push_back({"gqa, causal, a row without keys, sinks, dropout", d});
  cases.push_back({"mqa, one query against 16 keys", ShortDesc(2, 4, 1, 1, 16, 32, 32)});
  d = ShortDesc(2, 2, 2, 37, 13, 40, 24);
  d.mask.key_lengths = {13, 9};
  d.dropout = 0.1f, d.dropout_stream = RngStream(9, RngPurpose::kDropout, 2);
  cases.push_back({"37 queries, head sizes 40 and 24, padding, dropout", d});
  d = ShortDesc(2, 2, 2, 16, 16, 16, 16);
  d.mask.causal = true, d.mask.window = 3;
  cases.push_back({"causal window 3", d});
  d = ShortDesc(2, 2, 1, 9, 5, 20, 40);  // the eight-key transpose, columns past a multiple of 16
  d.mask.key_lengths = {5, 3};
  d.dropout = 0.1f, d.dropout_stream = RngStream(10, RngPurpose::kDropout, 4);
  cases.push_back({"5 keys, head sizes 20 and 40, padding, dropout", d});
  return cases;
}

TEST(ShortAttentionAvx512, AgreesWithThePortableKernelForwardAndBackward) {
  if (!onednn::ShortAttentionAvx512Available()) GTEST_SKIP() << "no AVX-512F: the portable kernel runs here";
  for (const Case& c : Cases()) {
    const FusedAttentionDesc& d = c.d;
    ASSERT_TRUE(IsShortAttention(d)) << c.name;
    const int64_t rows = d.batch * d.heads * d.queries, kv_rows = d.batch * d.kv_heads * d.keys;
    const auto q = Values(rows * d.head_dim, 1), k = Values(kv_rows * d.head_dim, 2);
    const auto v = Values(kv_rows * d.value_dim, 3), dout = Values(rows * d.value_dim, 4);
    std::vector<float> out(rows * d.value_dim), lse(rows), out2(out.size()), lse2(lse.size());
    PortableShortAttentionForward(d, q.data(), k.data(), v.data(), out.data(), lse.data());
    onednn::ShortAttentionForwardAvx512(d, q.data(), k.data(), v.data(), out2.data(), lse2.data());
    ExpectWithinRounding(out2, out, c.name + ": out");
    ExpectWithinRounding(lse2, lse, c.name + ": lse");
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
    std::vector<float> dq2(q.size(), NAN), dk2(k.size(), NAN), dv2(v.size(), NAN);  // every one written
    PortableShortAttentionBackward(d, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                                   dq.data(), dk.data(), dv.data());
    onednn::ShortAttentionBackwardAvx512(d, q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                                         dq2.data(), dk2.data(), dv2.data());
    ExpectWithinRounding(dq2, dq, c.name + ": dq");
    ExpectWithinRounding(dk2, dk, c.name + ": dk");
    ExpectWithinRounding(dv2, dv, c.name + ": dv");
  }
}

// The backend's entry takes it on this CPU: the same bits as calling it.
TEST(ShortAttentionAvx512, IsWhatShortAttentionRunsOnAvx512) {
  if (!onednn::ShortAttentionAvx512Available()) GTEST_SKIP() << "no AVX-512F";
  const FusedAttentionDesc d = Cases()[0].d;
  const int64_t n = d.batch * d.heads * d.queries * d.head_dim;
  const auto q = Values(n, 5), k = Values(n, 6), v = Values(n, 7);
  std::vector<float> out(n), lse(n / d.head_dim), out2(n), lse2(lse.size());
  ShortAttentionForward(d, q.data(), k.data(), v.data(), out.data(), lse.data());
  onednn::ShortAttentionForwardAvx512(d, q.data(), k.data(), v.data(), out2.data(), lse2.data());
  EXPECT_EQ(out, out2);
  EXPECT_EQ(lse, lse2);
}

}  // namespace
}  // namespace tvlab
