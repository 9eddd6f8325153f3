// transposed_gemm.h: which products cpu_onednn multiplies after copying A
// into rows or as their swapped transpose, and that those products equal
// the reference GEMM's and, where this CPU takes the route, bit for bit the
// backend's own product of A given in rows or of the swapped operands (the
// copies are exact).

#include "framework/backend/cpu_onednn/transposed_gemm.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/reference/reference_backend.h"
#include "framework/backend/cpu_onednn/test_values.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

// One product (m, k) @ (k, n), A stored transposed (k, m) when trans_a.
GemmDesc Desc(int64_t m, int64_t n, int64_t k, bool trans_a) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k, d.trans_a = trans_a;
  return d;
}

TEST(TransposesAFirst, OnlyWideAndNarrowWeightGradientsWithoutAvx512) {
  const bool kAvx2 = false, kAvx512 = true;
  EXPECT_TRUE(onednn::TransposesAFirst(Desc(1024, 256, 4096, true), kAvx2));  // GPT bench's d_ff x d
  EXPECT_TRUE(onednn::TransposesAFirst(Desc(4096, 128, 2048, true), kAvx2));
  EXPECT_FALSE(onednn::TransposesAFirst(Desc(1024, 256, 4096, true), kAvx512));  // not measured there
  EXPECT_FALSE(onednn::TransposesAFirst(Desc(1024, 256, 4096, false), kAvx2));   // A already in rows
  EXPECT_FALSE(onednn::TransposesAFirst(Desc(768, 256, 4096, true), kAvx2));     // too few rows
  EXPECT_FALSE(onednn::TransposesAFirst(Desc(1024, 384, 4096, true), kAvx2));    // too wide
  EXPECT_FALSE(onednn::TransposesAFirst(Desc(1024, 64, 4096, true), kAvx2));     // too narrow
  EXPECT_FALSE(onednn::TransposesAFirst(Desc(1024, 256, 0, true), kAvx2));       // nothing to sum
  GemmDesc batched = Desc(1024, 256, 64, true);
  batched.batch = 2, batched.stride_a = batched.stride_c = 1024 * 256;
  EXPECT_FALSE(onednn::TransposesAFirst(batched, kAvx2));
  GemmDesc bf16 = Desc(1024, 256, 64, true);
  bf16.precision = Precision::kBf16;
  EXPECT_FALSE(onednn::TransposesAFirst(bf16, kAvx2));
}

// Plain, scaled and accumulating products (alpha, beta) of a routed shape.
// k is 512 because up to k 256 oneDNN's transposed and row kernels happen
// to sum in the same order, and the bitwise check could not tell the routes
// apart (with the route switched off this test fails at k 512).
TEST(TransposesAFirst, TheBackendsProductIsTheReferencesAndThatOfARows) {
  OnednnBackend backend;
  ReferenceBackend reference;
  const bool routed = !onednn::OnednnHasAvx512Core();
  for (const auto& [alpha, beta] : {std::pair<float, float>{1.0f, 0.0f}, {0.5f, 1.0f}}) {
    GemmDesc d = Desc(1024, 192, 512, true);
    d.alpha = alpha, d.beta = beta;
    ASSERT_EQ(routed, onednn::TransposesAFirst(d, onednn::OnednnHasAvx512Core()));
    const auto a_t = Values(d.k * d.m, 1), b = Values(d.k * d.n, 2), c0 = Values(d.m * d.n, 3);
    std::vector<float> a_rows(d.m * d.k);  // A (m, k) from a_t (k, m)
    for (int64_t p = 0; p < d.k; ++p)
      for (int64_t i = 0; i < d.m; ++i) a_rows[i * d.k + p] = a_t[p * d.m + i];
    std::vector<float> got = c0, want = c0, from_rows = c0;
    backend.Gemm(d, a_t.data(), b.data(), got.data());
    reference.Gemm(d, a_t.data(), b.data(), want.data());
    GemmDesc in_rows = d;
    in_rows.trans_a = false;
    backend.Gemm(in_rows, a_rows.data(), b.data(), from_rows.data());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << "element " << i;
    }
    if (routed) {
      EXPECT_EQ(0, std::memcmp(got.data(), from_rows.data(), got.size() * sizeof(float)));
    }
  }
}

TEST(SwapsOperands, OnlyFewRowsManyColumnsWithoutBetaOrAvx512) {
  const bool kAvx2 = false, kAvx512 = true;
  EXPECT_TRUE(onednn::SwapsOperands(Desc(256, 1024, 4096, true), kAvx2));  // GPT bench's d x d_ff
  EXPECT_TRUE(onednn::SwapsOperands(Desc(128, 4096, 512, true), kAvx2));
  EXPECT_FALSE(onednn::SwapsOperands(Desc(256, 1024, 4096, true), kAvx512));
  EXPECT_FALSE(onednn::SwapsOperands(Desc(256, 1024, 4096, false), kAvx2));  // A in rows
  EXPECT_FALSE(onednn::SwapsOperands(Desc(256, 256, 4096, true), kAvx2));    // swapped: too few rows
  EXPECT_FALSE(onednn::SwapsOperands(Desc(512, 1024, 4096, true), kAvx2));   // too many rows
  GemmDesc trans_b = Desc(256, 1024, 4096, true);
  trans_b.trans_b = true;
  EXPECT_FALSE(onednn::SwapsOperands(trans_b, kAvx2));
  GemmDesc accumulating = Desc(256, 1024, 4096, true);
  accumulating.beta = 1.0f;  // C^T's copy back would have to add C
  EXPECT_FALSE(onednn::SwapsOperands(accumulating, kAvx2));
}

// The swapped route against the reference and, where this CPU takes it,
// bit for bit against the swapped product computed and transposed here.
TEST(SwapsOperands, TheBackendsProductIsTheReferencesAndTheSwappedProductTransposed) {
  OnednnBackend backend;
  ReferenceBackend reference;
  const bool routed = !onednn::OnednnHasAvx512Core();
  for (float alpha : {1.0f, 0.5f}) {
    GemmDesc d = Desc(192, 1024, 512, true);
    d.alpha = alpha;
    ASSERT_EQ(routed, onednn::SwapsOperands(d, onednn::OnednnHasAvx512Core()));
    const auto a_t = Values(d.k * d.m, 4), b = Values(d.k * d.n, 5);
    std::vector<float> got(d.m * d.n), want(got.size()), swapped(got.size());
    backend.Gemm(d, a_t.data(), b.data(), got.data());
    reference.Gemm(d, a_t.data(), b.data(), want.data());
    backend.Gemm(onednn::SwappedProduct(d), b.data(), a_t.data(), swapped.data());  // (n, m)
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << "element " << i;
    }
    if (routed) {
      for (int64_t i = 0; i < d.m; ++i) {
        for (int64_t j = 0; j < d.n; ++j) {
          ASSERT_EQ(got[i * d.n + j], swapped[j * d.m + i]) << i << ", " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tvlab
