// NormalizeBackward's rows eight at a time (normalize_backward_groups.h).
// Row by row, each row's eight double lane sums were finished in scalar
// code (a store, fourteen additions, two divisions) and its passes reloaded
// x and dy; here eight rows' lanes go down one shuffled tree, their means
// are one vector division, and each row's x and dy are loaded once for
// dgamma's and dbeta's terms and dx (LayerNorm backward at 512 x 64 on an
// AMD EPYC Zen 4: 16.9 -> 12.4-13.1 us hot; bench/README.md).

#include "framework/backend/cpu_onednn/normalize_backward_groups.h"

#include <immintrin.h>

#include "framework/backend/cpu_onednn/transpose16_avx512.h"

// (GCC 12's _mm512_cvtps_pd and _mm512_cvtpd_ps start from
// _mm512_undefined_*() and warn that it "may be used uninitialized" in some
// builds: a false positive in the header.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tvlab {
namespace onednn {
namespace {

constexpr int kGroupRows = 8;

// The columns [whole, cols) of rows [r, r + 8), added in order to each
// row's sums (the row loop's FinishRowSums).
inline void AddTailColumns(const float* x, const float* dy, const float* gamma, const float* mean, const float* rstd,
                           int64_t r, int64_t whole, int64_t cols, double* sum_g, double* sum_gx) {
  for (int i = 0; i < kGroupRows && whole < cols; ++i) {
    const float *xr = x + (r + i) * cols, *dyr = dy + (r + i) * cols;
    for (int64_t c = whole; c < cols; ++c) {
      const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      sum_g[i] += g;
      sum_gx[i] += static_cast<double>(g) * ((xr[c] - mean[r + i]) * rstd[r + i]);
    }
  }
}

// ---- AVX-512 ----

// Lane r = ((v[r]_0 + v[r]_1) + (v[r]_2 + v[r]_3)) + ((v[r]_4 + v[r]_5) +
// (v[r]_6 + v[r]_7)) for the eight rows' lane sums v[r]: the row loop's tree
// for all eight rows at once, one vector addition a level, the pairs of each
// level brought side by side by shuffles (14, not a whole transpose's 24):
// the same additions of the same operands, so the same bits.
__attribute__((target("avx512f"))) inline __m512d TreeSumsOfEight(const __m512d* v) {
  // pairs[k], 128-bit lane j: rows 2k and 2k + 1's lanes 2j + (2j + 1).
  __m512d pairs[4];
  for (int k = 0; k < 4; ++k)
    pairs[k] = _mm512_add_pd(_mm512_unpacklo_pd(v[2 * k], v[2 * k + 1]), _mm512_unpackhi_pd(v[2 * k], v[2 * k + 1]));
  // quads[m]: rows 4m, 4m + 1 (128-bit lanes 0, 1) and 4m + 2, 4m + 3 (2,
  // 3), the pairs 0 + 1 (lanes 0, 2) and 2 + 3 (lanes 1, 3) of each.
  __m512d quads[2];
  for (int m = 0; m < 2; ++m)
    quads[m] = _mm512_add_pd(_mm512_shuffle_f64x2(pairs[2 * m], pairs[2 * m + 1], 0x88),
                             _mm512_shuffle_f64x2(pairs[2 * m], pairs[2 * m + 1], 0xDD));
  return _mm512_add_pd(_mm512_shuffle_f64x2(quads[0], quads[1], 0x88), _mm512_shuffle_f64x2(quads[0], quads[1], 0xDD));
}

// The sums of rows [r, r + 8): one vcvtps2pd per eight floats, the lanes
// of all the rows added by TreeSumsOfEight, then the columns left.
__attribute__((target("avx512f"))) void RowSumsOfEight(const float* x, const float* dy, const float* gamma,
                                                       const float* mean, const float* rstd, int64_t r, int64_t cols,
                                                       double* sum_g, double* sum_gx) {
  __m512d acc_g[kGroupRows], acc_gx[kGroupRows];
  const int64_t whole = cols / 8 * 8;
  for (int i = 0; i < kGroupRows; ++i) {
    const float* xr = x + (r + i) * cols;
    const float* dyr = dy + (r + i) * cols;
    const __m256 mu8 = _mm256_set1_ps(mean[r + i]), rs8 = _mm256_set1_ps(rstd[r + i]);
    __m512d g_lanes = _mm512_setzero_pd(), gx_lanes = _mm512_setzero_pd();
    for (int64_t c = 0; c < whole; c += 8) {
      const __m256 gamma8 = gamma ? _mm256_loadu_ps(gamma + c) : _mm256_set1_ps(1.0f);
      const __m512d g = _mm512_cvtps_pd(_mm256_mul_ps(_mm256_loadu_ps(dyr + c), gamma8));
      const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + c), mu8), rs8);
      g_lanes = _mm512_add_pd(g_lanes, g);
      gx_lanes = _mm512_add_pd(gx_lanes, _mm512_mul_pd(g, _mm512_cvtps_pd(xhat)));
    }
    acc_g[i] = g_lanes;
    acc_gx[i] = gx_lanes;
  }
  _mm512_storeu_pd(sum_g, TreeSumsOfEight(acc_g));
  _mm512_storeu_pd(sum_gx, TreeSumsOfEight(acc_gx));
  AddTailColumns(x, dy, gamma, mean, rstd, r, whole, cols, sum_g, sum_gx);
}

// The passes of rows [r, r + 8) once their means mg and mgx are known,
// sixteen columns at a time (the last ones masked): dgamma's and dbeta's
// terms added into pg and pb in row order, and dx (plus the addend's rows
// where not null), each row's x and dy loaded once for both. The row loop's
// float operations, so the same bits.
__attribute__((target("avx512f"))) void GroupPasses(const float* x, const float* gamma, const float* mean,
                                                    const float* rstd, const float* dy, const float* addend, float* dx,
                                                    float* pg, float* pb, int64_t r, int64_t cols, const float* mg,
                                                    const float* mgx) {
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 in = Columns(c, cols);
    const __m512 gamma16 = gamma ? _mm512_maskz_loadu_ps(in, gamma + c) : _mm512_set1_ps(1.0f);
    __m512 g_terms = pg ? _mm512_maskz_loadu_ps(in, pg + c) : _mm512_setzero_ps();
    __m512 b_terms = pb ? _mm512_maskz_loadu_ps(in, pb + c) : _mm512_setzero_ps();
    for (int i = 0; i < kGroupRows; ++i) {
      const int64_t at = (r + i) * cols + c;
      const __m512 rs = _mm512_set1_ps(rstd[r + i]);
      const __m512 dyv = _mm512_maskz_loadu_ps(in, dy + at);
      const __m512 xhat =
          _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(in, x + at), _mm512_set1_ps(mean[r + i])), rs);
      g_terms = _mm512_add_ps(g_terms, _mm512_mul_ps(dyv, xhat));
      b_terms = _mm512_add_ps(b_terms, dyv);
      const __m512 g = _mm512_mul_ps(dyv, gamma16);
      __m512 d = _mm512_mul_ps(
          rs, _mm512_sub_ps(_mm512_sub_ps(g, _mm512_set1_ps(mg[i])), _mm512_mul_ps(xhat, _mm512_set1_ps(mgx[i]))));
      if (addend) d = _mm512_add_ps(_mm512_maskz_loadu_ps(in, addend + at), d);
      _mm512_mask_storeu_ps(dx + at, in, d);
    }
    if (pg) _mm512_mask_storeu_ps(pg + c, in, g_terms);
    if (pb) _mm512_mask_storeu_ps(pb + c, in, b_terms);
  }
}

// ---- AVX2 ----

// Lane i = ((v[i]_0 + v[i]_1) + (v[i]_2 + v[i]_3)) for four rows' lanes
// 0-3 (or 4-7) v[i]: TreeSumsOfEight's first two levels on 256 bits.
__attribute__((target("avx2"), always_inline)) inline __m256d HalfTreeOfFour(const __m256d* v) {
  const __m256d ab = _mm256_add_pd(_mm256_unpacklo_pd(v[0], v[1]), _mm256_unpackhi_pd(v[0], v[1]));
  const __m256d cd = _mm256_add_pd(_mm256_unpacklo_pd(v[2], v[3]), _mm256_unpackhi_pd(v[2], v[3]));
  return _mm256_add_pd(_mm256_permute2f128_pd(ab, cd, 0x20), _mm256_permute2f128_pd(ab, cd, 0x31));
}

// The sums of rows [r, r + 8) on AVX2, each row's eight lanes as two
// halves of four (the row loop's DoubleLanes<false>): the same tree.
__attribute__((target("avx2"))) void RowSumsOfEightAvx2(const float* x, const float* dy, const float* gamma,
                                                        const float* mean, const float* rstd, int64_t r, int64_t cols,
                                                        double* sum_g, double* sum_gx) {
  __m256d g_lo[kGroupRows], g_hi[kGroupRows], gx_lo[kGroupRows], gx_hi[kGroupRows];  // lanes 0-3 and 4-7
  for (int i = 0; i < kGroupRows; ++i) {
    const float* xr = x + (r + i) * cols;
    const float* dyr = dy + (r + i) * cols;
    const __m256 mu8 = _mm256_set1_ps(mean[r + i]), rs8 = _mm256_set1_ps(rstd[r + i]);
    __m256d glo = _mm256_setzero_pd(), ghi = glo, gxlo = glo, gxhi = glo;
    for (int64_t c = 0; c < cols; c += 8) {
      const __m256 gamma8 = gamma ? _mm256_loadu_ps(gamma + c) : _mm256_set1_ps(1.0f);
      const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dyr + c), gamma8);
      const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + c), mu8), rs8);
      const __m256d g0 = _mm256_cvtps_pd(_mm256_castps256_ps128(g)), g1 = _mm256_cvtps_pd(_mm256_extractf128_ps(g, 1));
      glo = _mm256_add_pd(glo, g0);
      ghi = _mm256_add_pd(ghi, g1);
      gxlo = _mm256_add_pd(gxlo, _mm256_mul_pd(g0, _mm256_cvtps_pd(_mm256_castps256_ps128(xhat))));
      gxhi = _mm256_add_pd(gxhi, _mm256_mul_pd(g1, _mm256_cvtps_pd(_mm256_extractf128_ps(xhat, 1))));
    }
    g_lo[i] = glo, g_hi[i] = ghi, gx_lo[i] = gxlo, gx_hi[i] = gxhi;
  }
  for (int q = 0; q < kGroupRows; q += 4) {
    _mm256_storeu_pd(sum_g + q, _mm256_add_pd(HalfTreeOfFour(g_lo + q), HalfTreeOfFour(g_hi + q)));
    _mm256_storeu_pd(sum_gx + q, _mm256_add_pd(HalfTreeOfFour(gx_lo + q), HalfTreeOfFour(gx_hi + q)));
  }
}

// GroupPasses on AVX2, eight columns at a time (cols a multiple of 8).
__attribute__((target("avx2"))) void GroupPassesAvx2(const float* x, const float* gamma, const float* mean,
                                                     const float* rstd, const float* dy, const float* addend, float* dx,
                                                     float* pg, float* pb, int64_t r, int64_t cols, const float* mg,
                                                     const float* mgx) {
  for (int64_t c = 0; c < cols; c += 8) {
    const __m256 gamma8 = gamma ? _mm256_loadu_ps(gamma + c) : _mm256_set1_ps(1.0f);
    __m256 g_terms = pg ? _mm256_loadu_ps(pg + c) : _mm256_setzero_ps();
    __m256 b_terms = pb ? _mm256_loadu_ps(pb + c) : _mm256_setzero_ps();
    for (int i = 0; i < kGroupRows; ++i) {
      const int64_t at = (r + i) * cols + c;
      const __m256 rs = _mm256_set1_ps(rstd[r + i]);
      const __m256 dyv = _mm256_loadu_ps(dy + at);
      const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + at), _mm256_set1_ps(mean[r + i])), rs);
      g_terms = _mm256_add_ps(g_terms, _mm256_mul_ps(dyv, xhat));
      b_terms = _mm256_add_ps(b_terms, dyv);
      const __m256 g = _mm256_mul_ps(dyv, gamma8);
      __m256 d = _mm256_mul_ps(
          rs, _mm256_sub_ps(_mm256_sub_ps(g, _mm256_set1_ps(mg[i])), _mm256_mul_ps(xhat, _mm256_set1_ps(mgx[i]))));
      if (addend) d = _mm256_add_ps(_mm256_loadu_ps(addend + at), d);
      _mm256_storeu_ps(dx + at, d);
    }
    if (pg) _mm256_storeu_ps(pg + c, g_terms);
    if (pb) _mm256_storeu_ps(pb + c, b_terms);
  }
}

// ---- The groups ----

__attribute__((target("avx512f"))) int64_t GroupsAvx512(const float* x, const float* gamma, const float* mean,
                                                        const float* rstd, const float* dy, const float* addend,
                                                        float* dx, float* pg, float* pb, int64_t first, int64_t last,
                                                        int64_t cols, bool subtract_mean) {
  int64_t r = first;
  for (; r + kGroupRows <= last; r += kGroupRows) {
    alignas(64) double sum_g[kGroupRows], sum_gx[kGroupRows];
    RowSumsOfEight(x, dy, gamma, mean, rstd, r, cols, sum_g, sum_gx);
    alignas(32) float mg[kGroupRows], mgx[kGroupRows];  // the row loop's (float)(sum / cols)
    const __m512d n = _mm512_set1_pd(static_cast<double>(cols));
    _mm256_store_ps(mg, subtract_mean ? _mm512_cvtpd_ps(_mm512_div_pd(_mm512_load_pd(sum_g), n)) : _mm256_setzero_ps());
    _mm256_store_ps(mgx, _mm512_cvtpd_ps(_mm512_div_pd(_mm512_load_pd(sum_gx), n)));
    GroupPasses(x, gamma, mean, rstd, dy, addend, dx, pg, pb, r, cols, mg, mgx);
  }
  return r;
}

__attribute__((target("avx2"))) int64_t GroupsAvx2(const float* x, const float* gamma, const float* mean,
                                                   const float* rstd, const float* dy, const float* addend, float* dx,
                                                   float* pg, float* pb, int64_t first, int64_t last, int64_t cols,
                                                   bool subtract_mean) {
  if (cols % 8 != 0) return first;
  int64_t r = first;
  for (; r + kGroupRows <= last; r += kGroupRows) {
    alignas(32) double sum_g[kGroupRows], sum_gx[kGroupRows];
    RowSumsOfEightAvx2(x, dy, gamma, mean, rstd, r, cols, sum_g, sum_gx);
    alignas(16) float mg[kGroupRows], mgx[kGroupRows];  // the row loop's (float)(sum / cols)
    const __m256d n = _mm256_set1_pd(static_cast<double>(cols));
    for (int q = 0; q < kGroupRows; q += 4) {
      _mm_store_ps(mg + q,
                   subtract_mean ? _mm256_cvtpd_ps(_mm256_div_pd(_mm256_load_pd(sum_g + q), n)) : _mm_setzero_ps());
      _mm_store_ps(mgx + q, _mm256_cvtpd_ps(_mm256_div_pd(_mm256_load_pd(sum_gx + q), n)));
    }
    GroupPassesAvx2(x, gamma, mean, rstd, dy, addend, dx, pg, pb, r, cols, mg, mgx);
  }
  return r;
}

}  // namespace

int64_t NormalizeBackwardGroupsAvx512(const float* x, const float* gamma, const float* mean, const float* rstd,
                                      const float* dy, const float* addend, float* dx, float* pg, float* pb,
                                      int64_t first, int64_t last, int64_t cols, bool subtract_mean) {
  return GroupsAvx512(x, gamma, mean, rstd, dy, addend, dx, pg, pb, first, last, cols, subtract_mean);
}

int64_t NormalizeBackwardGroupsAvx2(const float* x, const float* gamma, const float* mean, const float* rstd,
                                    const float* dy, const float* addend, float* dx, float* pg, float* pb,
                                    int64_t first, int64_t last, int64_t cols, bool subtract_mean) {
  return GroupsAvx2(x, gamma, mean, rstd, dy, addend, dx, pg, pb, first, last, cols, subtract_mean);
}

}  // namespace onednn
}  // namespace tvlab

#pragma GCC diagnostic pop
