// LayerNormRowsAvx512 (layer_norm_rows.h): rows sixteen at a time, each
// row's sums of lanes taken for all sixteen at once down a transpose, and
// the rows left over one at a time; the same operations on the same
// operands either way, so the same bits. Row by row (in the captured sort
// step on an Intel Xeon, 11 us a call at 512 x 64 against 19-22 for
// oneDNN's primitive) each row waited on its chains of shuffles, additions,
// a division and a square root; sixteen rows at a time took 512 x 64 from
// 8.5-8.7 to 5.9-6.2 us hot on an AMD EPYC Zen 4 (bench/README.md).

#include "framework/backend/cpu_onednn/layer_norm_rows.h"

#include <immintrin.h>

#include <cmath>

#include "framework/backend/cpu_onednn/transpose16_avx512.h"

// (Transpose16's unpacks and _mm512_sqrt_ps start from _mm512_undefined_*():
// GCC 12 warns that it "may be used uninitialized", a false positive in the
// header.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tvlab {
namespace onednn {
namespace {

constexpr int kGroup = 16;  // rows a group: one transpose

// The sum of v's 16 lanes as a tree: lane l + lane l + 8, then + 4, + 2,
// + 1 (the order of _mm512_reduce_add_ps; GCC vector shuffles, since that
// header's intrinsics draw GCC 12 -Wmaybe-uninitialized warnings).
typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
__attribute__((target("avx512f"))) inline float SumOfLanes(__m512 lanes) {
  F16 v = lanes;
  v += __builtin_shuffle(v, I16{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
  v += __builtin_shuffle(v, I16{4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3});
  v += __builtin_shuffle(v, I16{2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1});
  return v[0] + v[1];
}

// Lane r = SumOfLanes(v[r]) for r < 16: v transposed (t[e] lane r = v[r]
// lane e), then SumOfLanes' tree one vector addition a level (t[e] +
// t[e + 8], then + 4, + 2, + 1): the same additions of the same operands.
// Sixteen rows' reductions advance together instead of one row's chain of
// shuffles and additions at a time.
__attribute__((target("avx512f"))) inline __m512 SumsOfLanes(const __m512* v) {
  __m512 t[kGroup];
  Transpose16(v, t);
  for (int e = 0; e < 8; ++e) t[e] = _mm512_add_ps(t[e], t[e + 8]);
  for (int e = 0; e < 4; ++e) t[e] = _mm512_add_ps(t[e], t[e + 4]);
  for (int e = 0; e < 2; ++e) t[e] = _mm512_add_ps(t[e], t[e + 2]);
  return _mm512_add_ps(t[0], t[1]);
}

// Row r's y from its mean m and rstd rs (fma((x - m) * rs, gamma, beta)).
__attribute__((target("avx512f"))) inline void NormalizedRow(const float* xr, const float* gamma, const float* beta,
                                                            float m, float rs, int64_t cols, float* yr) {
  const __m512 mv = _mm512_set1_ps(m), rv = _mm512_set1_ps(rs);
  for (int64_t c = 0; c < cols; c += 16) {
    const __m512 scaled = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + c), mv), rv);
    const __m512 g = gamma != nullptr ? _mm512_loadu_ps(gamma + c) : _mm512_set1_ps(1.0f);
    const __m512 b = beta != nullptr ? _mm512_loadu_ps(beta + c) : _mm512_setzero_ps();
    _mm512_storeu_ps(yr + c, _mm512_fmadd_ps(scaled, g, b));
  }
}

// NormalizedRow for a group's rows of kVectors * 16 columns, gamma and
// beta loaded once for all of them (the rows' stores could alias them, so
// the compiler reloads them a row).
template <int kVectors>
__attribute__((target("avx512f"))) inline void NormalizedRows(const float* x, const float* gamma, const float* beta,
                                                             const float* m, const float* rs, float* y) {
  __m512 g[kVectors], b[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    g[v] = gamma != nullptr ? _mm512_loadu_ps(gamma + 16 * v) : _mm512_set1_ps(1.0f);
    b[v] = beta != nullptr ? _mm512_loadu_ps(beta + 16 * v) : _mm512_setzero_ps();
  }
  for (int r = 0; r < kGroup; ++r) {
    const __m512 mv = _mm512_set1_ps(m[r]), rv = _mm512_set1_ps(rs[r]);
    for (int v = 0; v < kVectors; ++v) {
      const float* xr = x + (r * kVectors + v) * 16;
      const __m512 scaled = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr), mv), rv);
      _mm512_storeu_ps(y + (r * kVectors + v) * 16, _mm512_fmadd_ps(scaled, g[v], b[v]));
    }
  }
}

// One row: its sums reduced by SumOfLanes.
__attribute__((target("avx512f"))) void LayerNormRow(const float* xr, const float* gamma, const float* beta, float* yr,
                                                     float* mean, float* rstd, int64_t cols, float eps) {
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < cols; c += 16) sum = _mm512_add_ps(sum, _mm512_loadu_ps(xr + c));
  const float m = SumOfLanes(sum) / static_cast<float>(cols);
  const __m512 mv = _mm512_set1_ps(m);
  __m512 squares = _mm512_setzero_ps();
  for (int64_t c = 0; c < cols; c += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(xr + c), mv);
    squares = _mm512_fmadd_ps(d, d, squares);
  }
  const float rs = 1.0f / std::sqrt(SumOfLanes(squares) / static_cast<float>(cols) + eps);
  *mean = m;
  *rstd = rs;
  NormalizedRow(xr, gamma, beta, m, rs, cols, yr);
}

// Sixteen rows: LayerNormRow's operations, each row's two sums of lanes
// taken for all sixteen by SumsOfLanes, and the divisions and square root
// one vector for all sixteen (the same IEEE operations lane by lane).
__attribute__((target("avx512f"))) void LayerNormSixteenRows(const float* x, const float* gamma, const float* beta,
                                                             float* y, float* mean, float* rstd, int64_t cols,
                                                             float eps) {
  const __m512 n = _mm512_set1_ps(static_cast<float>(cols));
  __m512 partial[kGroup];
  for (int r = 0; r < kGroup; ++r) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t c = 0; c < cols; c += 16) sum = _mm512_add_ps(sum, _mm512_loadu_ps(x + r * cols + c));
    partial[r] = sum;
  }
  alignas(64) float m[kGroup], rs[kGroup];
  _mm512_store_ps(m, _mm512_div_ps(SumsOfLanes(partial), n));
  for (int r = 0; r < kGroup; ++r) {
    const __m512 mv = _mm512_set1_ps(m[r]);
    __m512 squares = _mm512_setzero_ps();
    for (int64_t c = 0; c < cols; c += 16) {
      const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + r * cols + c), mv);
      squares = _mm512_fmadd_ps(d, d, squares);
    }
    partial[r] = squares;
  }
  const __m512 variance = _mm512_div_ps(SumsOfLanes(partial), n);
  _mm512_store_ps(rs,
                  _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(_mm512_add_ps(variance, _mm512_set1_ps(eps)))));
  _mm512_storeu_ps(mean, _mm512_load_ps(m));
  _mm512_storeu_ps(rstd, _mm512_load_ps(rs));
  switch (cols) {  // gamma and beta in registers across the rows where they fit
    case 16: return NormalizedRows<1>(x, gamma, beta, m, rs, y);
    case 32: return NormalizedRows<2>(x, gamma, beta, m, rs, y);
    case 48: return NormalizedRows<3>(x, gamma, beta, m, rs, y);
    case 64: return NormalizedRows<4>(x, gamma, beta, m, rs, y);
  }
  for (int r = 0; r < kGroup; ++r) NormalizedRow(x + r * cols, gamma, beta, m[r], rs[r], cols, y + r * cols);
}

}  // namespace

void LayerNormRowsAvx512(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                         int64_t rows, int64_t cols, float eps) {
  int64_t r = 0;
  for (; r + kGroup <= rows; r += kGroup)
    LayerNormSixteenRows(x + r * cols, gamma, beta, y + r * cols, mean + r, rstd + r, cols, eps);
  for (; r < rows; ++r) LayerNormRow(x + r * cols, gamma, beta, y + r * cols, mean + r, rstd + r, cols, eps);
}

}  // namespace onednn
}  // namespace tvlab

#pragma GCC diagnostic pop
