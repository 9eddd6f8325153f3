// medium_gemm.h's loop: against the reference GEMM, bit for bit against the
// order it promises (one FMA per term, p = 0..k-1, from 0, then the bias or
// the old C), its column sums against cpu_onednn's ReduceSumTo,
// the same bits on one and two threads, and OnednnBackend::Gemm taking it
// exactly for the shapes IsMediumGemm names. Skipped on CPUs without
// AVX-512, where the loop is never taken.

#include "framework/backend/cpu_onednn/medium_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/test_values.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "framework/backend/reference/reference_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

GemmDesc Desc(int64_t m, int64_t n, int64_t k, bool ta) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k, d.trans_a = ta;
  return d;
}

// The order medium_gemm.h promises, written out with std::fma.
std::vector<float> InOrder(const GemmDesc& d, const std::vector<float>& a, const std::vector<float>& b,
                           const float* bias) {
  std::vector<float> c(d.m * d.n);
  for (int64_t i = 0; i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < d.k; ++p) sum = std::fma(d.trans_a ? a[p * d.m + i] : a[i * d.k + p], b[p * d.n + j], sum);
      c[i * d.n + j] = bias != nullptr ? sum + bias[j] : sum;
    }
  return c;
}

class MediumGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!onednn::OnednnHasAvx512Core()) GTEST_SKIP() << "no AVX-512: cpu_onednn never takes the loop here";
  }
};

TEST_F(MediumGemmTest, MatchesTheReferenceAndItsOwnOrderBitForBit) {
  ReferenceBackend ref;
  int cases = 0;
  // m past multiples of 4 and 8 (the row blocks), n of an odd number of
  // vectors and (A not transposed) past or short of a multiple of 16
  // (masked columns), k past a multiple of 64 (the weight gradients' panels).
  for (int64_t m : {1, 3, 4, 10, 17, 64})
    for (int64_t n : {3, 10, 16, 48, 64, 80, 128, 133})
      for (int64_t k : {1, 10, 64, 130, 512})
        for (bool ta : {false, true})
          for (bool with_bias : {false, true}) {
            const GemmDesc d = Desc(m, n, k, ta);
            if (ta && n % 16 != 0) {  // dW's column blocks are whole vectors: oneDNN's
              ASSERT_FALSE(onednn::IsMediumGemm(d, true));
              continue;
            }
            ASSERT_TRUE(onednn::IsMediumGemm(d, true));
            const auto a = Values(m * k, 1), b = Values(k * n, 2), bias = Values(n, 3);
            const float* bias_or_null = with_bias ? bias.data() : nullptr;
            std::vector<float> got(m * n, NAN), want(m * n, 0.0f);
            onednn::MediumGemm(d, a.data(), b.data(), bias_or_null, got.data());
            ref.Gemm(d, a.data(), b.data(), want.data());
            const std::string at = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                                   " ta=" + std::to_string(ta) + " bias=" + std::to_string(with_bias);
            for (size_t i = 0; i < got.size(); ++i)
              ASSERT_NEAR(got[i], want[i] + (with_bias ? bias[i % n] : 0.0f), 1e-4f * (1 + k / 64)) << at << " element " << i;
            const std::vector<float> ordered = InOrder(d, a, b, bias_or_null);
            ASSERT_EQ(0, std::memcmp(got.data(), ordered.data(), got.size() * sizeof(float))) << at;
            ++cases;
          }
  EXPECT_EQ(cases, 6 * (8 + 5) * 5 * 2);
}

// Products large enough to split their rows over two threads (the largest
// it takes; an odd number of row blocks; a dX): the same bits as one.
TEST_F(MediumGemmTest, TwoThreadsGiveTheSameBits) {
  for (const GemmDesc& d : {Desc(128, 64, 512, true), Desc(120, 96, 512, true), Desc(512, 80, 128, false)}) {
    ASSERT_TRUE(onednn::IsMediumGemm(d, true));
    ASSERT_GE(d.m * d.n * d.k, onednn::kParallelGemmMacs) << "the product no longer reaches the threaded path";
    const auto a = Values(d.m * d.k, 4), b = Values(d.k * d.n, 5);
    std::vector<float> one(d.m * d.n), two(one.size());
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    onednn::MediumGemm(d, a.data(), b.data(), nullptr, one.data());
    omp_set_num_threads(2);
    onednn::MediumGemm(d, a.data(), b.data(), nullptr, two.data());
    omp_set_num_threads(threads);
    EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float))) << d.m;
    EXPECT_EQ(0, std::memcmp(one.data(), InOrder(d, a, b, nullptr).data(), one.size() * sizeof(float))) << d.m;
  }
}

TEST(MediumGemm, TakesTheLinearProductsOfSmallModels) {
  EXPECT_TRUE(onednn::IsMediumGemm(Desc(512, 64, 64, false), true));   // the sort model's dX
  EXPECT_TRUE(onednn::IsMediumGemm(Desc(128, 64, 512, true), true));   // and a weight gradient
  EXPECT_FALSE(onednn::IsMediumGemm(Desc(512, 64, 64, false), false));  // no AVX-512
  GemmDesc forward = Desc(512, 64, 64, false), both_transposed = Desc(64, 64, 512, true);
  forward.trans_b = true;  // a Linear's forward: the weight transposed first
  both_transposed.trans_b = true;
  EXPECT_TRUE(onednn::IsMediumGemm(forward, true));
  EXPECT_FALSE(onednn::IsMediumGemm(both_transposed, true));
  EXPECT_TRUE(onednn::IsMediumGemm(Desc(512, 64, 10, false), true));     // the sort head's dX
  EXPECT_TRUE(onednn::IsMediumGemm(Desc(10, 64, 512, true), true));      // and its weight gradient
  EXPECT_FALSE(onednn::IsMediumGemm(Desc(64, 10, 512, true), true));     // a dW of 10 columns: oneDNN
  GemmDesc head = Desc(512, 10, 64, false);                               // and its forward, n 10
  head.trans_b = true;
  EXPECT_TRUE(onednn::IsMediumGemm(head, true));
  EXPECT_FALSE(onednn::IsMediumGemm(Desc(64, 64, 4096, true), true));    // k past 512
  EXPECT_FALSE(onednn::IsMediumGemm(Desc(4096, 256, 256, false), true));  // the GPT config's: oneDNN
  GemmDesc batched = Desc(8, 16, 16, false), scaled = batched, accumulating = batched, bf16 = batched;
  batched.batch = 4;
  scaled.alpha = 0.5f;
  accumulating.beta = 1.0f;
  bf16.precision = Precision::kBf16;
  GemmDesc accumulating_in_panels = Desc(64, 64, 512, true), half_beta = accumulating;
  accumulating_in_panels.beta = 1.0f;  // dW's panels overwrite C before the end
  half_beta.beta = 0.5f;
  for (const GemmDesc& d : {batched, scaled, accumulating_in_panels, half_beta, bf16})
    EXPECT_FALSE(onednn::IsMediumGemm(d, true));
  EXPECT_TRUE(onednn::IsMediumGemm(accumulating, true));  // a dX added into a gradient
}

// A Linear's forward, B = the weight (n, k) transposed: the loop's order
// on the weight's transpose, bias included; k past and short of the 16 x 16
// transpose blocks.
TEST_F(MediumGemmTest, TransposedBIsTheLoopOnTheTranspose) {
  for (const auto& [m, n, k] : {std::tuple{512, 64, 64}, std::tuple{17, 80, 130}, std::tuple{9, 16, 10},
                                std::tuple{512, 10, 64}, std::tuple{17, 33, 130}, std::tuple{5, 3, 20}}) {
    GemmDesc d = Desc(m, n, k, false);
    d.trans_b = true;
    ASSERT_TRUE(onednn::IsMediumGemm(d, true));
    const auto a = Values(m * k, 13), w = Values(n * k, 14), bias = Values(n, 15);
    std::vector<float> wt(k * n);  // (k, n)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) wt[p * n + j] = w[j * k + p];
    std::vector<float> got(m * n, NAN);
    onednn::MediumGemm(d, a.data(), w.data(), bias.data(), got.data());
    const std::vector<float> want = InOrder(Desc(m, n, k, false), a, wt, bias.data());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << m << " " << n << " " << k;
  }
}

// Beta 1 (autograd adding a dX into a gradient it already has): the old C
// plus the in-order sum, one float addition, as a separate Binary add of
// the two would give.
TEST_F(MediumGemmTest, BetaOneAddsTheSumToWhatCHeld) {
  for (const GemmDesc& base : {Desc(512, 64, 64, false), Desc(17, 80, 130, false), Desc(17, 21, 130, false)}) {
    GemmDesc d = base;
    d.beta = 1.0f;
    ASSERT_TRUE(onednn::IsMediumGemm(d, true));
    const auto a = Values(d.m * d.k, 8), b = Values(d.k * d.n, 9), old = Values(d.m * d.n, 10);
    std::vector<float> c = old;
    onednn::MediumGemm(d, a.data(), b.data(), nullptr, c.data());
    const std::vector<float> sums = InOrder(base, a, b, nullptr);
    for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], old[i] + sums[i]) << d.m << " element " << i;
  }
}

// A Linear's weight gradient with its bias gradient: the product's bits are
// MediumGemm's, and each column sum is cpu_onednn's ReduceSumTo's (in row
// order from 0), over row blocks of 8 and the rows left, panels of 64
// terms and the terms left.
TEST_F(MediumGemmTest, ColumnSumsAreReduceSumTosBits) {
  OnednnBackend backend;
  for (int64_t m : {1, 3, 8, 17, 64})
    for (int64_t n : {16, 48, 128})
      for (int64_t k : {1, 64, 130, 512}) {
        const GemmDesc d = Desc(m, n, k, true);
        ASSERT_TRUE(onednn::IsMediumGemm(d, true));
        const auto a = Values(k * m, 11), b = Values(k * n, 12);
        std::vector<float> c(m * n, NAN), sums(m, NAN), c_alone(m * n), sums_alone(m);
        onednn::MediumGemmAndColumnSums(d, a.data(), b.data(), c.data(), sums.data());
        onednn::MediumGemm(d, a.data(), b.data(), nullptr, c_alone.data());
        backend.ReduceSumTo(a.data(), {k, m}, sums_alone.data(), {m});
        const std::string at = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
        ASSERT_EQ(0, std::memcmp(c.data(), c_alone.data(), c.size() * sizeof(float))) << at;
        ASSERT_EQ(0, std::memcmp(sums.data(), sums_alone.data(), sums.size() * sizeof(float))) << at;
      }
}

// dW's panels change no bit: the product and its column sums in panels of
// 1, 7, 64 and 100 terms and in one panel (each panel's sums go on from the
// float C and the row sums hold), and the panel this machine chose.
TEST_F(MediumGemmTest, EveryPanelSizeGivesTheSameBits) {
  for (const GemmDesc& d : {Desc(64, 64, 512, true), Desc(17, 48, 130, true), Desc(8, 16, 1, true)}) {
    const auto a = Values(d.k * d.m, 16), b = Values(d.k * d.n, 17);
    const std::vector<float> want = InOrder(d, a, b, nullptr);
    std::vector<float> want_sums(d.m, 0.0f);
    for (int64_t p = 0; p < d.k; ++p)
      for (int64_t i = 0; i < d.m; ++i) want_sums[i] += a[p * d.m + i];
    const int64_t chosen = onednn::MediumGemmDwPanelTerms(d.k);
    EXPECT_TRUE(chosen == d.k || chosen == std::min<int64_t>(64, d.k)) << chosen;
    for (const int64_t panel : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{100}, d.k, chosen}) {
      std::vector<float> c(d.m * d.n, NAN), sums(d.m, NAN);
      onednn::MediumGemmAndColumnSumsInPanels(d, a.data(), b.data(), c.data(), sums.data(), panel);
      EXPECT_EQ(0, std::memcmp(c.data(), want.data(), c.size() * sizeof(float))) << d.m << " panel " << panel;
      EXPECT_EQ(0, std::memcmp(sums.data(), want_sums.data(), sums.size() * sizeof(float)))
          << d.m << " panel " << panel;
    }
  }
}

// The backend's Gemm gives the loop's bits exactly where it takes the loop;
// a batch of rows that share B is flattened into one product first.
TEST_F(MediumGemmTest, TheOnednnBackendRoutesTheProductsToIt) {
  OnednnBackend backend;
  GemmDesc shared_b = Desc(8, 64, 128, false);  // (64, 8, 128) activations x (128, 64) weight
  shared_b.batch = 64, shared_b.stride_a = 8 * 128, shared_b.stride_c = 8 * 64;
  const GemmDesc flat = Desc(512, 64, 128, false);
  for (const auto& [d, as_one] : {std::pair{Desc(64, 128, 512, true), Desc(64, 128, 512, true)}, std::pair{shared_b, flat}}) {
    const auto a = Values(as_one.m * as_one.k, 6), b = Values(as_one.k * as_one.n, 7);
    std::vector<float> via_backend(as_one.m * as_one.n), direct(via_backend.size());
    backend.Gemm(d, a.data(), b.data(), via_backend.data());
    onednn::MediumGemm(as_one, a.data(), b.data(), nullptr, direct.data());
    EXPECT_EQ(0, std::memcmp(via_backend.data(), direct.data(), direct.size() * sizeof(float))) << d.m;
  }
}

}  // namespace
}  // namespace tvlab
