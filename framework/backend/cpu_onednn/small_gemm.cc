// SmallBatchedGemm: one plain loop nest per product (small_gemm.h).

#include "framework/backend/cpu_onednn/small_gemm.h"

#include <immintrin.h>

#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/cpu_features.h"
#include "framework/core/isa_clones.h"

namespace tvlab {
namespace onednn {
namespace {

// Eight floats; GCC lowers arithmetic on it to one AVX register in the
// AVX2 clone and two SSE registers in the default one, element by element
// either way.
typedef float V8 __attribute__((vector_size(32)));
// Sixteen floats: one AVX-512 register (OneProductAvx512 only).
typedef float V16 __attribute__((vector_size(64)));
// The same at any float's alignment: rows of B read where B lies.
typedef float V8Unaligned __attribute__((vector_size(32), aligned(4)));
typedef float V16Unaligned __attribute__((vector_size(64), aligned(4)));

template <typename V>
constexpr int kLanesOf = sizeof(V) / sizeof(float);

// R rows of one product into acc: acc[r][v] lanes = sum over p in order of
// op(a)(r, p) * bt[p][L v + lane], with bt (k, L * NV) for L = V's lanes and
// op(a)(r, p) at a[r * a_row + p * a_col]. NV and R are compile-time so
// that the R x NV sums stay in registers and the R rows' chains of adds
// interleave.
template <typename V, int NV, int R>
inline __attribute__((always_inline)) void Rows(int64_t k, const float* a, int64_t a_row, int64_t a_col,
                                                const float* bt, V (&acc)[R][NV]) {
  constexpr int L = kLanesOf<V>;
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  for (int64_t p = 0; p < k; ++p) {
    const float* brow = bt + p * L * NV;
    for (int r = 0; r < R; ++r) {
      const float x = a[r * a_row + p * a_col];
      if constexpr (L == 8) {
        const V8 xs = {x, x, x, x, x, x, x, x};
        for (int v = 0; v < NV; ++v) acc[r][v] += xs * reinterpret_cast<const V8Unaligned*>(brow)[v];
      } else {
        const V16 xs = {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
        for (int v = 0; v < NV; ++v) acc[r][v] += xs * reinterpret_cast<const V16Unaligned*>(brow)[v];
      }
    }
  }
}

// One row of c = alpha * sums + beta * c (beta 0: c is not read); N > 0 is
// n known at compile time (a whole padded row: straight vector stores), 0
// any n.
template <int N>
inline __attribute__((always_inline)) void StoreRow(const float* sums, int64_t n, float alpha, float beta, float* c) {
  if (N > 0) n = N;
  if (beta == 0.0f) {
    for (int64_t j = 0; j < n; ++j) c[j] = alpha * sums[j];
  } else {
    for (int64_t j = 0; j < n; ++j) c[j] = alpha * sums[j] + beta * c[j];
  }
}

// c (m, n) = alpha * op(a) @ bt + beta * c for bt (k, L * NV) with
// L * NV >= n columns (those past n are ignored), R rows at a time: as
// many as keep R x NV sums within the registers (16 AVX2, 32 AVX-512).
template <typename V, int NV>
inline __attribute__((always_inline)) void Product(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row,
                                                   int64_t a_col, const float* bt, float alpha, float beta,
                                                   float* c) {
  constexpr int L = kLanesOf<V>;
  constexpr int R = L == 16 ? (NV <= 2 ? 8 : 4) : (NV <= 2 ? 4 : 2);
  const bool whole = n == L * NV;
  int64_t i = 0;
  for (; i + R <= m; i += R) {
    V acc[R][NV];
    Rows<V, NV, R>(k, a + i * a_row, a_row, a_col, bt, acc);
    for (int r = 0; r < R; ++r) {
      const float* sums = reinterpret_cast<const float*>(acc[r]);
      if (whole) {
        StoreRow<L * NV>(sums, n, alpha, beta, c + (i + r) * n);
      } else {
        StoreRow<0>(sums, n, alpha, beta, c + (i + r) * n);
      }
    }
  }
  for (; i < m; ++i) {
    V acc[1][NV];
    Rows<V, NV, 1>(k, a + i * a_row, a_row, a_col, bt, acc);
    StoreRow<0>(reinterpret_cast<const float*>(acc[0]), n, alpha, beta, c + i * n);
  }
}

// One product with op(B) as bt (k, width) for width 8, 16, 32 or 64 (the
// smallest >= n). Cloned for AVX2 without FMA: the same multiplies and adds
// as the SSE2 default clone, so the same bits on every machine.
TVLAB_CLONED_LOOP void OneProductLoop(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
                                      const float* bt, int64_t width, float alpha, float beta, float* c) {
  switch (width) {
    case 8: return Product<V8, 1>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
    case 16: return Product<V8, 2>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
    case 32: return Product<V8, 4>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
    default: return Product<V8, 8>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
  }
}

void OneProduct(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* bt,
                int64_t width, float alpha, float beta, float* c) {
  RunIsaClone<OneProductLoop, CloneIsa::kAvx2>(m, n, k, a, a_row, a_col, bt, width, alpha, beta, c);
}

// OneProduct on AVX-512 CPUs: rows of 16 and more in 16-lane registers
// (half the instructions of the AVX2 clone), eight rows at a time; rows of
// 8 take the AVX2 clone (as fast there). The same multiply and add per term
// in the same order (-ffp-contract=off: no FMA), so the same bits.
__attribute__((target("avx512f"))) void OneProductAvx512(int64_t m, int64_t n, int64_t k, const float* a,
                                                        int64_t a_row, int64_t a_col, const float* bt,
                                                        int64_t width, float alpha, float beta, float* c) {
  switch (width) {
    case 8: return OneProduct(m, n, k, a, a_row, a_col, bt, width, alpha, beta, c);
    case 16: return Product<V16, 1>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
    case 32: return Product<V16, 2>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
    default: return Product<V16, 4>(m, n, k, a, a_row, a_col, bt, alpha, beta, c);
  }
}

// The columns of bt: n rounded up to 8, 16, 32 or 64.
int64_t Width(int64_t n) { return n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 64; }

// bt (k, width) = op(B) zero-padded past column n, for B stored (k, n), or
// (n, k) when trans_b.
void PackB(const float* b, int64_t n, int64_t k, bool trans_b, int64_t width, float* bt) {
  if (trans_b) {  // read B's rows (contiguous), write bt's columns
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) bt[p * width + j] = b[j * k + p];
  } else {
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bt[p * width + j] = b[p * n + j];
  }
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = n; j < width; ++j) bt[p * width + j] = 0.0f;
}

// PackB for B stored (8, k) with k a multiple of 8, transposed (the scores
// q @ k^T at eight keys): bt (k, 8) by 8 x 8 blocks transposed in AVX
// registers (unpack, shuffle, lane permute) instead of 64 scalar copies each.
// Only moves floats: the same bt as PackB.
__attribute__((target("avx2"))) void PackTransposed8Avx2(const float* b, int64_t k, float* bt) {
  for (int64_t p0 = 0; p0 < k; p0 += 8) {
    __m256 row[8];
    for (int j = 0; j < 8; ++j) row[j] = _mm256_loadu_ps(b + j * k + p0);  // B(j, p0 .. p0 + 7)
    const __m256 t0 = _mm256_unpacklo_ps(row[0], row[1]), t1 = _mm256_unpackhi_ps(row[0], row[1]);
    const __m256 t2 = _mm256_unpacklo_ps(row[2], row[3]), t3 = _mm256_unpackhi_ps(row[2], row[3]);
    const __m256 t4 = _mm256_unpacklo_ps(row[4], row[5]), t5 = _mm256_unpackhi_ps(row[4], row[5]);
    const __m256 t6 = _mm256_unpacklo_ps(row[6], row[7]), t7 = _mm256_unpackhi_ps(row[6], row[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    float* out = bt + p0 * 8;  // rows p0 .. p0 + 7 of bt, 8 floats each
    _mm256_storeu_ps(out + 0 * 8, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(out + 1 * 8, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(out + 2 * 8, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(out + 3 * 8, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(out + 4 * 8, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(out + 5 * 8, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(out + 6 * 8, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(out + 7 * 8, _mm256_permute2f128_ps(u3, u7, 0x31));
  }
}

}  // namespace

bool IsSmallBatchedGemm(const GemmDesc& d, bool onednn_has_avx512_core) {
  const bool small = d.precision == Precision::kFp32 && d.batch > 1 && d.m <= kSmallGemmMaxDim &&
                     d.n <= kSmallGemmMaxDim && d.k <= kSmallGemmMaxDim && d.m * d.n * d.k <= kSmallGemmMaxMacs;
  return small && (!onednn_has_avx512_core || (d.m <= kSmallGemmMaxRowsAvx512 && d.n <= kSmallGemmMaxColsAvx512));
}

void SmallBatchedGemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  const int64_t a_row = d.trans_a ? 1 : d.k, a_col = d.trans_a ? d.m : 1;
  const int64_t stride_c = d.stride_c == 0 ? d.m * d.n : d.stride_c;  // as the oneDNN path reads it
  const bool parallel = d.batch * d.m * d.n * d.k >= kParallelGemmMacs;
#pragma omp parallel if (parallel)
  {
    alignas(32) float bt[kSmallGemmMaxDim * kSmallGemmMaxDim];  // (k, width): op(B), padded
    const int64_t width = Width(d.n);
    // B stored (k, n) with n a width already is op(B) as the loop reads it.
    const bool in_place = !d.trans_b && d.n == width;
    static const bool avx2 = CpuHasAvx2();
    static const auto product = CpuHasAvx512f() ? OneProductAvx512 : OneProduct;
    const bool transpose8 = avx2 && d.trans_b && d.n == 8 && d.k % 8 == 0;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < d.batch; ++i) {
      const float* bi = b + i * d.stride_b;
      if (transpose8) {
        PackTransposed8Avx2(bi, d.k, bt);
      } else if (!in_place) {
        PackB(bi, d.n, d.k, d.trans_b, width, bt);
      }
      product(d.m, d.n, d.k, a + i * d.stride_a, a_row, a_col, in_place ? bi : bt, width, d.alpha, d.beta,
              c + i * stride_c);
    }
  }
}

}  // namespace onednn
}  // namespace tvlab
