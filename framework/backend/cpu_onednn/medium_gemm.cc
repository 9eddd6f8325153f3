// MediumGemm: register-blocked AVX-512 sums over the whole of k
// (medium_gemm.h).

#include "framework/backend/cpu_onednn/medium_gemm.h"

#include <immintrin.h>

#include "framework/backend/cpu_onednn/parallel.h"

namespace tvlab {
namespace onednn {
namespace {

// Columns of C one register block covers: NV AVX-512 vectors.
constexpr int kLanes = 16;

// C's MR rows x (kLanes * NV) columns from column j: the sum over p in
// order of a(r, p) * b(p, j + ...), one FMA per term from 0, then + bias.
// a(r, p) is at a[r * a_row + p * a_col]; b's row p at b + p * ldb; C's rows
// ldc apart. MR and NV are compile-time so that the MR x NV sums stay in
// registers for the whole of k.
template <int MR, int NV>
__attribute__((target("avx512f"), always_inline)) inline void Block(int64_t k, const float* a, int64_t a_row,
                                                                   int64_t a_col, const float* b, int64_t ldb,
                                                                   const float* bias, float* c, int64_t ldc) {
  __m512 sum[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 row[NV];  // B(p, j .. j + kLanes * NV)
    for (int v = 0; v < NV; ++v) row[v] = _mm512_loadu_ps(b + p * ldb + kLanes * v);
    for (int r = 0; r < MR; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * a_row + p * a_col]);
      for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_fmadd_ps(x, row[v], sum[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      __m512 out = sum[r][v];
      if (bias != nullptr) out = _mm512_add_ps(out, _mm512_loadu_ps(bias + kLanes * v));
      _mm512_storeu_ps(c + r * ldc + kLanes * v, out);
    }
}

// Where the rows and columns of one product lie.
struct Operands {
  int64_t m, n, k;
  const float* a;
  int64_t a_row, a_col;  // op(A)(i, p) at a[i * a_row + p * a_col]
  const float* b;        // (k, n)
  const float* bias;     // (n) or null
  float* c;              // (m, n)
};

// Rows [i, i + MR) of C, every column: blocks of 64 columns, then of 16.
template <int MR>
__attribute__((target("avx512f"))) void RowBlock(const Operands& o, int64_t i) {
  const float* a = o.a + i * o.a_row;
  float* c = o.c + i * o.n;
  int64_t j = 0;
  for (; j + 4 * kLanes <= o.n; j += 4 * kLanes)
    Block<MR, 4>(o.k, a, o.a_row, o.a_col, o.b + j, o.n, o.bias ? o.bias + j : nullptr, c + j, o.n);
  for (; j < o.n; j += kLanes)
    Block<MR, 1>(o.k, a, o.a_row, o.a_col, o.b + j, o.n, o.bias ? o.bias + j : nullptr, c + j, o.n);
}

// Four rows at a time (one thread a block), the rows past a multiple of
// four one at a time.
void Product(const Operands& o) {
  const int64_t blocks = o.m / 4;
  const bool parallel = o.m * o.n * o.k >= kParallelGemmMacs;
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t x = 0; x < blocks; ++x) RowBlock<4>(o, 4 * x);
  for (int64_t i = 4 * blocks; i < o.m; ++i) RowBlock<1>(o, i);
}

}  // namespace

bool IsMediumGemm(const GemmDesc& d, bool onednn_has_avx512_core) {
  return onednn_has_avx512_core && d.precision == Precision::kFp32 && d.batch == 1 && !d.trans_b &&
         d.alpha == 1.0f && d.beta == 0.0f && d.m > 0 && d.k > 0 && d.n > 0 && d.n % kLanes == 0 &&
         d.n <= kMediumGemmMaxN && d.k <= kMediumGemmMaxK && d.m * d.n * d.k <= kMediumGemmMaxMacs;
}

void MediumGemm(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c) {
  Product(Operands{d.m, d.n, d.k, a, d.trans_a ? 1 : d.k, d.trans_a ? d.m : 1, b, bias, c});
}

}  // namespace onednn
}  // namespace tvlab
