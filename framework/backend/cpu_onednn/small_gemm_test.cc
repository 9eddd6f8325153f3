// small_gemm.h's loop: against the reference GEMM (every transpose,
// broadcast operand, alpha and beta, widths 8 to 64), bit for bit against
// the order it promises (float sums in order p = 0..k-1, no FMA), and
// OnednnBackend::Gemm taking it exactly for the shapes IsSmallBatchedGemm
// names.

#include "framework/backend/cpu_onednn/small_gemm.h"

#include <omp.h>

#include <cstring>
#include <string>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/backend/reference/reference_backend.h"
#include "framework/backend/cpu_onednn/test_values.h"
#include "framework/backend/cpu_onednn/transposed_gemm.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using onednn_testing::Values;

GemmDesc Desc(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  GemmDesc d;
  d.batch = batch, d.m = m, d.n = n, d.k = k, d.trans_a = ta, d.trans_b = tb;
  d.stride_a = m * k, d.stride_b = k * n, d.stride_c = m * n;
  return d;
}

// The order small_gemm.h promises, written out: float sums over p in order,
// a multiply and an add per term, then alpha and beta.
std::vector<float> InOrder(const GemmDesc& d, const std::vector<float>& a, const std::vector<float>& b,
                           std::vector<float> c) {
  for (int64_t x = 0; x < d.batch; ++x) {
    const float* A = a.data() + x * d.stride_a;
    const float* B = b.data() + x * d.stride_b;
    float* C = c.data() + x * d.stride_c;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        volatile float sum = 0.0f;  // volatile: one rounding per multiply and per add
        for (int64_t p = 0; p < d.k; ++p) {
          volatile float term = (d.trans_a ? A[p * d.m + i] : A[i * d.k + p]) * (d.trans_b ? B[j * d.k + p] : B[p * d.n + j]);
          sum = sum + term;
        }
        const float scaled = d.alpha * sum;
        C[i * d.n + j] = d.beta == 0.0f ? scaled : scaled + d.beta * C[i * d.n + j];
      }
  }
  return c;
}

TEST(SmallBatchedGemm, MatchesTheReferenceAndItsOwnOrderBitForBit) {
  ReferenceBackend ref;
  int cases = 0;
  for (int64_t m : {1, 5, 8})
    for (int64_t n : {3, 8, 13, 16, 40, 64})
      for (int64_t k : {1, 7, 16})
        for (bool ta : {false, true})
          for (bool tb : {false, true})
            for (int shared : {0, 1, 2}) {  // none, A shared, B shared
              GemmDesc d = Desc(3, m, n, k, ta, tb);
              if (shared == 1) d.stride_a = 0;
              if (shared == 2) d.stride_b = 0;
              d.alpha = shared == 0 ? 1.0f : 0.375f;
              d.beta = shared == 2 ? 0.5f : 0.0f;
              const auto a = Values(d.batch * m * k, 1), b = Values(d.batch * k * n, 2);
              // beta 0 must not read c: NaN there would show.
              std::vector<float> c0 = d.beta == 0.0f ? std::vector<float>(d.batch * m * n, NAN) : Values(d.batch * m * n, 3);
              std::vector<float> got = c0, want = c0;
              onednn::SmallBatchedGemm(d, a.data(), b.data(), got.data());
              ref.Gemm(d, a.data(), b.data(), want.data());
              const std::string at = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                                     " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                                     " shared=" + std::to_string(shared);
              for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << at << " element " << i;
              const std::vector<float> ordered = InOrder(d, a, b, c0);
              ASSERT_EQ(0, std::memcmp(got.data(), ordered.data(), got.size() * sizeof(float))) << at;
              ++cases;
            }
  EXPECT_EQ(cases, 3 * 6 * 3 * 2 * 2 * 3);
}

// The widest products it takes (n and k 64, a row of 64 sums), and a
// batch large enough to split over two threads: the same bits as one.
TEST(SmallBatchedGemm, WidestShapesAndTwoThreadsGiveTheSameBits) {
  GemmDesc d = Desc(1024, 1, 64, 64, false, true);
  ASSERT_TRUE(onednn::IsSmallBatchedGemm(d, /*onednn_has_avx512_core=*/false));
  ASSERT_GE(d.batch * d.m * d.n * d.k, onednn::kParallelGemmMacs) << "the batch no longer reaches the threaded path";
  const auto a = Values(d.batch * d.m * d.k, 4), b = Values(d.batch * d.k * d.n, 5);
  std::vector<float> one(d.batch * d.m * d.n), two(one.size());
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  onednn::SmallBatchedGemm(d, a.data(), b.data(), one.data());
  omp_set_num_threads(2);
  onednn::SmallBatchedGemm(d, a.data(), b.data(), two.data());
  omp_set_num_threads(threads);
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(one.data(), InOrder(d, a, b, one).data(), one.size() * sizeof(float)));
}

TEST(SmallBatchedGemm, TakesOnlyBatchesOfSmallFp32Products) {
  for (bool avx512 : {false, true}) {
    SCOPED_TRACE(avx512 ? "oneDNN with AVX-512" : "oneDNN without AVX-512");
    EXPECT_TRUE(onednn::IsSmallBatchedGemm(Desc(256, 8, 8, 16, false, true), avx512));  // sort model's q @ k^T
    EXPECT_TRUE(onednn::IsSmallBatchedGemm(Desc(256, 8, 16, 8, true, false), avx512));  // and its weights' gradient
    EXPECT_FALSE(onednn::IsSmallBatchedGemm(Desc(1, 8, 8, 16, false, false), avx512));  // one product: oneDNN
    EXPECT_FALSE(onednn::IsSmallBatchedGemm(Desc(256, 32, 32, 32, false, false), avx512));  // more MACs than the limit
    EXPECT_FALSE(onednn::IsSmallBatchedGemm(Desc(256, 1, 65, 1, false, false), avx512));    // wider than 64
    GemmDesc bf16 = Desc(256, 8, 8, 16, false, true);
    bf16.precision = Precision::kBf16;
    EXPECT_FALSE(onednn::IsSmallBatchedGemm(bf16, avx512));
  }
  // T 16 and 32 (head size 16): the loop without AVX-512, oneDNN's AVX-512
  // kernels with it; likewise 64 columns at 8 rows.
  for (const GemmDesc& d : {Desc(256, 16, 16, 16, false, false), Desc(256, 32, 32, 16, false, true),
                            Desc(256, 8, 64, 8, false, false)}) {
    EXPECT_TRUE(onednn::IsSmallBatchedGemm(d, false)) << d.m << " x " << d.n;
    EXPECT_FALSE(onednn::IsSmallBatchedGemm(d, true)) << d.m << " x " << d.n;
  }
}

// The backend's Gemm gives the loop's bits exactly where it takes the loop,
// and oneDNN's (close, not equal in general) where it does not.
TEST(SmallBatchedGemm, TheOnednnBackendRoutesSmallBatchesToIt) {
  OnednnBackend backend;
  for (const GemmDesc& d : {Desc(64, 8, 8, 16, false, true), Desc(64, 8, 16, 8, true, false)}) {
    ASSERT_TRUE(onednn::IsSmallBatchedGemm(d, onednn::OnednnHasAvx512Core()));
    const auto a = Values(d.batch * d.m * d.k, 6), b = Values(d.batch * d.k * d.n, 7);
    std::vector<float> via_backend(d.batch * d.m * d.n), direct(via_backend.size());
    backend.Gemm(d, a.data(), b.data(), via_backend.data());
    onednn::SmallBatchedGemm(d, a.data(), b.data(), direct.data());
    EXPECT_EQ(0, std::memcmp(via_backend.data(), direct.data(), direct.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace tvlab
