// bf16_medium_gemm.h's products: bit for bit the order they promise (each
// operand rounded to nearest bf16, ties to even; each pair's products added
// in fp32, term p + 1 then term p, pairs in order; then + bias or + C),
// near the reference GEMM in bf16, their column sums cpu_onednn's
// ReduceSumTo's bits, the same bits on one and two threads, and
// OnednnBackend taking them for exactly the shapes IsBf16MediumGemm names.
// Skipped on CPUs without AVX512_BF16 (or under an ONEDNN_MAX_CPU_ISA cap
// below it), where bf16 products stay oneDNN's.

#include "framework/backend/cpu_onednn/bf16_medium_gemm.h"

#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "framework/backend/cpu_onednn/medium_gemm.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/cpu_onednn/test_values.h"
#include "framework/backend/precision.h"
#include "framework/backend/reference/reference_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

GemmDesc Desc(int64_t m, int64_t n, int64_t k, bool ta, bool tb = false) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k, d.trans_a = ta, d.trans_b = tb, d.precision = Precision::kBf16;
  return d;
}

// The promised order written out: op(A)(i, p) and op(B)(p, j) rounded to
// bf16, pairs (p, p + 1) from p = 0, term p + 1 added before term p, each
// product exact in float; then + bias, or + C (beta 1).
std::vector<float> InOrder(const GemmDesc& d, const std::vector<float>& a, const std::vector<float>& b,
                           const float* bias, const std::vector<float>& c0) {
  auto op_a = [&](int64_t i, int64_t p) { return RoundToBf16(d.trans_a ? a[p * d.m + i] : a[i * d.k + p]); };
  auto op_b = [&](int64_t p, int64_t j) { return RoundToBf16(d.trans_b ? b[j * d.k + p] : b[p * d.n + j]); };
  std::vector<float> c(d.m * d.n);
  for (int64_t i = 0; i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < d.k; p += 2) {
        if (p + 1 < d.k) sum += op_a(i, p + 1) * op_b(p + 1, j);
        sum += op_a(i, p) * op_b(p, j);
      }
      if (bias != nullptr) sum += bias[j];
      if (d.beta == 1.0f) sum += c0[i * d.n + j];
      c[i * d.n + j] = sum;
    }
  return c;
}

class Bf16MediumGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!onednn::CpuRunsBf16DotProducts())
      GTEST_SKIP() << "no AVX512_BF16 (or capped below it): bf16 products stay oneDNN's here";
  }
};

std::string At(const GemmDesc& d) {
  return "m=" + std::to_string(d.m) + " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k) +
         " ta=" + std::to_string(d.trans_a) + " tb=" + std::to_string(d.trans_b) + " beta=" + std::to_string(d.beta);
}

// m past multiples of 4 and 8 (row blocks), n past or short of multiples of
// 16 (masked columns; dW's whole vectors only), odd k (a last pair of one
// term), the sort model's shapes; with and without bias, beta 0 and 1.
TEST_F(Bf16MediumGemmTest, MatchesItsOrderBitForBitAndTheReferenceInBf16) {
  ReferenceBackend ref;
  const double u = std::ldexp(1.0, -24);
  int cases = 0;
  for (int64_t m : {1, 5, 17, 64, 512})
    for (int64_t n : {10, 16, 48, 64, 133})
      for (int64_t k : {1, 33, 64, 128, 512})
        for (int form = 0; form < 4; ++form) {  // forward (B^T, bias), dX, dX into a gradient, dW
          GemmDesc d = Desc(m, n, k, form == 3, form == 0);
          d.beta = form == 2 ? 1.0f : 0.0f;
          if (!onednn::IsBf16MediumGemm(d)) continue;
          const auto a = Values(m * k, 1), b = Values(k * n, 2), bias = Values(n, 3), c0 = Values(m * n, 4);
          const float* bias_or_null = form == 0 ? bias.data() : nullptr;
          std::vector<float> got = c0, want = c0;
          onednn::Bf16MediumGemm(d, a.data(), b.data(), bias_or_null, got.data());
          const std::vector<float> ordered = InOrder(d, a, b, bias_or_null, c0);
          ASSERT_EQ(0, std::memcmp(got.data(), ordered.data(), got.size() * sizeof(float))) << At(d);
          ref.Gemm(d, a.data(), b.data(), want.data());
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const float expected = want[i * n + j] + (form == 0 ? bias[j] : 0.0f);
              ASSERT_NEAR(got[i * n + j], expected, (k + 4) * u * (k + 2))  // |a|, |b|, |bias|, |C| < 1
                  << At(d) << " at " << i << "," << j;
            }
          ++cases;
        }
  EXPECT_GT(cases, 300);  // every form at most sizes (dW: n a multiple of 16, m * n * k within the limit)
}

// Ties go to even: 1 + 2^-8 lies halfway between the bf16 values 1 and 1 +
// 2^-7 and rounds to 1; 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 +
// 2^-6 and rounds to 1 + 2^-6. With k 1, C is the product of the rounded
// operands, exactly.
TEST_F(Bf16MediumGemmTest, OperandsRoundToNearestTiesToEven) {
  for (bool ta : {false, true}) {
    const GemmDesc d = Desc(16, 16, 1, ta);
    ASSERT_TRUE(onednn::IsBf16MediumGemm(d));
    std::vector<float> a(16, 1.0f + std::ldexp(1.0f, -8)), b(16, 1.0f + 3 * std::ldexp(1.0f, -8)), c(256, NAN);
    onednn::Bf16MediumGemm(d, a.data(), b.data(), nullptr, c.data());
    for (float v : c) ASSERT_EQ(v, 1.0f + std::ldexp(1.0f, -6)) << "ta=" << ta;
  }
}

// A Linear's weight gradient with its bias gradient: the product's bits are
// Bf16MediumGemm's, and each column sum is ReduceSumTo's over the unrounded
// values.
TEST_F(Bf16MediumGemmTest, ColumnSumsAreReduceSumTosBitsOfTheUnroundedValues) {
  OnednnBackend backend;
  for (int64_t m : {1, 8, 17, 64})
    for (int64_t n : {16, 128})
      for (int64_t k : {1, 63, 512}) {
        const GemmDesc d = Desc(m, n, k, true);
        ASSERT_TRUE(onednn::IsBf16MediumGemm(d));
        const auto a = Values(k * m, 11), b = Values(k * n, 12);
        std::vector<float> c(m * n, NAN), sums(m, NAN), c_alone(m * n), sums_alone(m);
        onednn::Bf16MediumGemmAndColumnSums(d, a.data(), b.data(), c.data(), sums.data());
        onednn::Bf16MediumGemm(d, a.data(), b.data(), nullptr, c_alone.data());
        backend.ReduceSumTo(a.data(), {k, m}, sums_alone.data(), {m});
        ASSERT_EQ(0, std::memcmp(c.data(), c_alone.data(), c.size() * sizeof(float))) << At(d);
        ASSERT_EQ(0, std::memcmp(sums.data(), sums_alone.data(), sums.size() * sizeof(float))) << At(d);
      }
}

// Products large enough to split their rows over two threads: the same bits.
TEST_F(Bf16MediumGemmTest, TwoThreadsGiveTheSameBits) {
  for (const GemmDesc& d : {Desc(128, 64, 512, true), Desc(120, 96, 512, true), Desc(512, 80, 128, false),
                            Desc(512, 128, 64, false, true)}) {
    ASSERT_TRUE(onednn::IsBf16MediumGemm(d));
    ASSERT_GE(d.m * d.n * d.k, onednn::kParallelGemmMacs) << "the product no longer reaches the threaded path";
    const auto a = Values(d.m * d.k, 4), b = Values(d.k * d.n, 5);
    std::vector<float> one(d.m * d.n), two(one.size());
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    onednn::Bf16MediumGemm(d, a.data(), b.data(), nullptr, one.data());
    omp_set_num_threads(2);
    onednn::Bf16MediumGemm(d, a.data(), b.data(), nullptr, two.data());
    omp_set_num_threads(threads);
    EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float))) << At(d);
  }
}

// OnednnBackend's Gemm, GemmBias and GemmAndColumnSums in bf16 give the
// loop's bits for the sort model's shapes (a batch of 64 sequences of 8
// flattened into one product), and the loop names no other precision.
TEST_F(Bf16MediumGemmTest, TheBackendTakesTheSortModelsBf16Products) {
  OnednnBackend backend;
  GemmDesc forward = Desc(8, 128, 64, false, true), dx = Desc(8, 64, 128, false);
  forward.batch = dx.batch = 64, forward.stride_a = 8 * 64, dx.stride_a = 8 * 128;
  forward.stride_c = 8 * 128, dx.stride_c = 8 * 64;
  const auto x = Values(512 * 128, 6), w = Values(128 * 128, 7), bias = Values(128, 8);
  std::vector<float> got(512 * 128), want(512 * 128);
  backend.GemmBias(forward, x.data(), w.data(), bias.data(), got.data());
  onednn::Bf16MediumGemm(Desc(512, 128, 64, false, true), x.data(), w.data(), bias.data(), want.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), 512 * 128 * sizeof(float)));
  backend.Gemm(dx, x.data(), w.data(), got.data());
  onednn::Bf16MediumGemm(Desc(512, 64, 128, false), x.data(), w.data(), nullptr, want.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), 512 * 64 * sizeof(float)));
  std::vector<float> sums(64), sums_want(64);
  const auto dy = Values(512 * 64, 9);  // dW = dY^T X: (64, 128) over 512 rows
  backend.GemmAndColumnSums(Desc(64, 128, 512, true), dy.data(), x.data(), got.data(), sums.data());
  onednn::Bf16MediumGemmAndColumnSums(Desc(64, 128, 512, true), dy.data(), x.data(), want.data(), sums_want.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), 64 * 128 * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(sums.data(), sums_want.data(), 64 * sizeof(float)));
  GemmDesc fp32 = Desc(512, 64, 64, false), tf32 = fp32, big = Desc(4096, 256, 256, false);
  fp32.precision = Precision::kFp32, tf32.precision = Precision::kTf32;
  for (const GemmDesc& d : {fp32, tf32, big}) EXPECT_FALSE(onednn::IsBf16MediumGemm(d)) << At(d);
}

}  // namespace
}  // namespace tvlab
