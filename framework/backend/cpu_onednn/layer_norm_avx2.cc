// LayerNormRowsAvx2 (layer_norm_rows.h): LayerNormRowsAvx512's operations on
// AVX2 + FMA, each 16-lane vector as two halves of eight (lanes 0-7 and
// 8-15, the same partial sums), so the same bits. Rows eight at a time,
// each row's sums of lanes taken for all eight down one 8 x 8 transpose,
// and the rows left over one at a time (as LayerNormRowsAvx512 takes
// sixteen, bench/README.md "Dropout in one pass, and LayerNorm's rows
// sixteen at a time").

#include <immintrin.h>

#include <cmath>

#include "framework/backend/cpu_onednn/layer_norm_rows.h"
#include "framework/backend/cpu_onednn/transpose8_avx2.h"

namespace tvlab {
namespace onednn {
namespace {

constexpr int kGroup = 8;  // rows a group: one 8 x 8 transpose

// The halves' sum as SumOfLanes adds the 16 lanes: lane l + lane l + 8 (the
// halves added), the 128-bit halves of that (+ 4), then + 2 and + 1.
__attribute__((target("avx2,fma"))) inline float SumOfHalves(__m256 low, __m256 high) {
  const __m256 v8 = _mm256_add_ps(low, high);
  const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(v2) + _mm_cvtss_f32(_mm_shuffle_ps(v2, v2, 1));
}

// Lane r = SumOfHalves(low[r], high[r]) for r < 8: the halves added, the
// eight rows transposed, then SumOfHalves' tree one vector addition a level
// (+ 4, + 2, + 1): the same additions of the same operands.
__attribute__((target("avx2,fma"))) inline __m256 SumsOfHalves(const __m256* low, const __m256* high) {
  __m256 v[kGroup], t[kGroup];
  for (int r = 0; r < kGroup; ++r) v[r] = _mm256_add_ps(low[r], high[r]);
  Transpose8(v, t);
  for (int e = 0; e < 4; ++e) t[e] = _mm256_add_ps(t[e], t[e + 4]);
  for (int e = 0; e < 2; ++e) t[e] = _mm256_add_ps(t[e], t[e + 2]);
  return _mm256_add_ps(t[0], t[1]);
}

// Row r's y from its mean m and rstd rs (fma((x - m) * rs, gamma, beta)).
__attribute__((target("avx2,fma"))) inline void NormalizedRow(const float* xr, const float* gamma, const float* beta,
                                                              float m, float rs, int64_t cols, float* yr) {
  const __m256 mv = _mm256_set1_ps(m), rv = _mm256_set1_ps(rs);
  for (int64_t c = 0; c < cols; c += 8) {
    const __m256 scaled = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + c), mv), rv);
    const __m256 g = gamma != nullptr ? _mm256_loadu_ps(gamma + c) : _mm256_set1_ps(1.0f);
    const __m256 b = beta != nullptr ? _mm256_loadu_ps(beta + c) : _mm256_setzero_ps();
    _mm256_storeu_ps(yr + c, _mm256_fmadd_ps(scaled, g, b));
  }
}

// A row's two halves of partial sums of x (from 0), or of (x - m)^2 by fma.
__attribute__((target("avx2,fma"))) inline void RowHalves(const float* xr, int64_t cols, bool squares, float m,
                                                          __m256* low, __m256* high) {
  const __m256 mv = _mm256_set1_ps(m);
  __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t c = 0; c < cols; c += 16)
    for (int h = 0; h < 2; ++h) {
      const __m256 v = _mm256_loadu_ps(xr + c + 8 * h);
      if (squares) {
        const __m256 d = _mm256_sub_ps(v, mv);
        sum[h] = _mm256_fmadd_ps(d, d, sum[h]);
      } else {
        sum[h] = _mm256_add_ps(sum[h], v);
      }
    }
  *low = sum[0], *high = sum[1];
}

// One row: its sums reduced by SumOfHalves.
__attribute__((target("avx2,fma"))) void LayerNormRow(const float* xr, const float* gamma, const float* beta, float* yr,
                                                      float* mean, float* rstd, int64_t cols, float eps) {
  __m256 low, high;
  RowHalves(xr, cols, /*squares=*/false, 0.0f, &low, &high);
  const float m = SumOfHalves(low, high) / static_cast<float>(cols);
  RowHalves(xr, cols, /*squares=*/true, m, &low, &high);
  const float rs = 1.0f / std::sqrt(SumOfHalves(low, high) / static_cast<float>(cols) + eps);
  *mean = m;
  *rstd = rs;
  NormalizedRow(xr, gamma, beta, m, rs, cols, yr);
}

// Eight rows: LayerNormRow's operations, each row's two sums of lanes taken
// for all eight by SumsOfHalves, and the divisions and square root one
// vector for the eight (the same IEEE operations lane by lane).
__attribute__((target("avx2,fma"))) void LayerNormEightRows(const float* x, const float* gamma, const float* beta,
                                                            float* y, float* mean, float* rstd, int64_t cols,
                                                            float eps) {
  const __m256 n = _mm256_set1_ps(static_cast<float>(cols));
  __m256 low[kGroup], high[kGroup];
  for (int r = 0; r < kGroup; ++r) RowHalves(x + r * cols, cols, /*squares=*/false, 0.0f, &low[r], &high[r]);
  alignas(32) float m[kGroup], rs[kGroup];
  _mm256_store_ps(m, _mm256_div_ps(SumsOfHalves(low, high), n));
  for (int r = 0; r < kGroup; ++r) RowHalves(x + r * cols, cols, /*squares=*/true, m[r], &low[r], &high[r]);
  const __m256 variance = _mm256_div_ps(SumsOfHalves(low, high), n);
  _mm256_store_ps(rs,
                  _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(_mm256_add_ps(variance, _mm256_set1_ps(eps)))));
  _mm256_storeu_ps(mean, _mm256_load_ps(m));
  _mm256_storeu_ps(rstd, _mm256_load_ps(rs));
  for (int r = 0; r < kGroup; ++r) NormalizedRow(x + r * cols, gamma, beta, m[r], rs[r], cols, y + r * cols);
}

}  // namespace

void LayerNormRowsAvx2(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t cols, float eps) {
  int64_t r = 0;
  for (; r + kGroup <= rows; r += kGroup)
    LayerNormEightRows(x + r * cols, gamma, beta, y + r * cols, mean + r, rstd + r, cols, eps);
  for (; r < rows; ++r) LayerNormRow(x + r * cols, gamma, beta, y + r * cols, mean + r, rstd + r, cols, eps);
}

}  // namespace onednn
}  // namespace tvlab
