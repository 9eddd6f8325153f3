// The mixers' FLOP formulas (mixer_cost.h): written out by hand for small
// shapes, and the gated linear one against the multiply-adds a plain
// chunked implementation counts while computing what the kit's recurrent
// form computes.

#include "framework/attention/mixer_cost.h"

#include <algorithm>
#include <vector>

#include "framework/attention/gated_linear.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Ungated linear attention of one head by chunks of `chunk`, as the chunked
// form computes it (dense (n, n) scores, masked; no state read in the first
// chunk), counting every multiply-add in *macs. q, k (T, dk), v (T, dv)
// row-major -> (T, dv).
std::vector<float> CountedChunked(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, int64_t t, int64_t dk, int64_t dv,
                                  int64_t chunk, int64_t* macs) {
  std::vector<float> out(static_cast<size_t>(t * dv), 0.0f), s(static_cast<size_t>(dk * dv), 0.0f);
  for (int64_t start = 0; start < t; start += chunk) {
    const int64_t n = std::min(chunk, t - start);
    std::vector<float> scores(static_cast<size_t>(n * n), 0.0f);  // (n, n) Q K^T
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t d = 0; d < dk; ++d, ++*macs)
          scores[i * n + j] += q[(start + i) * dk + d] * k[(start + j) * dk + d];
    for (int64_t i = 0; i < n; ++i)  // (n, n) x (n, dv), future keys masked to 0
      for (int64_t j = 0; j < n; ++j)
        for (int64_t e = 0; e < dv; ++e, ++*macs)
          out[(start + i) * dv + e] += (j <= i ? scores[i * n + j] : 0.0f) * v[(start + j) * dv + e];
    if (start > 0)  // (n, dk) x (dk, dv): the carried state's read
      for (int64_t i = 0; i < n; ++i)
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t e = 0; e < dv; ++e, ++*macs)
            out[(start + i) * dv + e] += q[(start + i) * dk + d] * s[d * dv + e];
    for (int64_t j = 0; j < n; ++j)  // (dk, n) x (n, dv): the state's update
      for (int64_t d = 0; d < dk; ++d)
        for (int64_t e = 0; e < dv; ++e, ++*macs) s[d * dv + e] += k[(start + j) * dk + d] * v[(start + j) * dv + e];
  }
  return out;
}

TEST(MixerCost, GatedLinearMatchesTheMultiplyAddsOfAChunkedImplementation) {
  const int64_t dk = 4, dv = 5;
  for (int64_t t : {1, 7, 8, 21}) {
    for (int64_t chunk : {1, 4, 8}) {
      Var q = RandomVar({1, 1, t, dk}, 1), k = RandomVar({1, 1, t, dk}, 2), v = RandomVar({1, 1, t, dv}, 3);
      int64_t macs = 0;
      const std::vector<float> out =
          CountedChunked(q.value().ToVector(), k.value().ToVector(), v.value().ToVector(), t, dk, dv, chunk, &macs);
      // It computes the mixer: the kit's recurrent form, token by token.
      const std::vector<float> want = GatedLinearRecurrent(q, k, v, Var(), Var()).out.value().ToVector();
      ASSERT_EQ(out.size(), want.size());
      for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-5f) << "t " << t << " chunk " << chunk;
      // 2 FLOPs a multiply-add, per position; 3 heads cost 3 times one.
      EXPECT_DOUBLE_EQ(GatedLinearChunkedFlopsPerToken({1, dk, dv, chunk}, t), 2.0 * macs / t)
          << "t " << t << " chunk " << chunk;
      EXPECT_DOUBLE_EQ(GatedLinearChunkedFlopsPerToken({3, dk, dv, chunk}, t), 3 * 2.0 * macs / t);
    }
  }
}

TEST(MixerCost, HandCountedShapes) {
  // Gated linear, dk = dv = 16, chunk 16, T = 40: chunks of 16, 16, 8.
  const double first = 2.0 * 16 * 16 * 16 + 2.0 * 16 * 16 * 16 + 2.0 * 16 * 16 * 16;  // QK^T, xV, K^T V
  const double second = first + 2.0 * 16 * 16 * 16;                                  // + Q S
  const double last = 2.0 * 8 * 8 * 16 + 2.0 * 8 * 8 * 16 + 2.0 * 8 * 16 * 16 + 2.0 * 8 * 16 * 16;
  EXPECT_DOUBLE_EQ(GatedLinearChunkedFlopsPerToken({2, 16, 16, 16}, 40), 2 * (first + second + last) / 40);
  // Long sequences of whole chunks approach 2 n (dk + dv) + 4 dk dv a head.
  EXPECT_NEAR(GatedLinearChunkedFlopsPerToken({1, 16, 16, 16}, 16 * 4096), 2 * 16 * 32 + 4 * 256, 0.5);

  // Delta rule, dk = dv = 4, chunk 3, T = 5: chunks of 3 and 2.
  auto chunk = [](double n, bool first) {
    double f = 2 * n * n * 4 + 2 * n * n * (n - 1) + 2 * n * n * 4 + 2 * n * n * 4 + 2 * n * n * 4 + 2 * n * 4 * 4;
    if (!first) f += 2 * n * n * 4 + 2 * n * 4 * 4 + 2 * n * 4 * 4;
    return f;
  };
  EXPECT_DOUBLE_EQ(DeltaRuleChunkedFlopsPerToken({2, 4, 4, 3}, 5), 2 * (chunk(3, true) + chunk(2, false)) / 5);
  EXPECT_EQ(DeltaRuleChunkedFlopsPerToken({2, 4, 4, 3}, 0), 0.0);
}

}  // namespace
}  // namespace tvlab
