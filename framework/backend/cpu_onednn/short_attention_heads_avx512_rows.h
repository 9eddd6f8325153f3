#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX512_ROWS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX512_ROWS_H_

// The steps of the heads-in-lanes short attention kernel
// (short_attention_heads_avx512.cc) that move between a block's sixteen
// heads in lanes and each head's own rows: a block's rows into lanes (and
// the log-sum-exps back), and the products that read the weights in lanes
// one head at a time, each weight broadcast from memory onto that head's
// rows (the weighted values, dq, dk, dv), so that those rows never go
// through a transpose. Only that file includes it.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "framework/backend/cpu_onednn/transpose16_avx512.h"

namespace tvlab {
namespace onednn {
namespace heads_avx512 {

#define TVLAB_HEADS __attribute__((target("avx512f"))) inline
#define TVLAB_HEADS_INLINE __attribute__((target("avx512f"), always_inline)) inline

constexpr int kLanes = 16;  // query heads a block

// t[e] lane j = p[j][e] for 16 rows of 16 at p[j]: Transpose16 with its
// first two rounds done by the loads (each vector gathers four rows'
// 128-bit quarters: two 128-bit loads into a 256-bit half, twice, and the
// halves joined), then 4 x 4 transposes within the quarters (32 shuffles,
// not 64). The inserts took the sort shape's q from 2.77 to 2.22 us on an
// AMD EPYC Zen 4 against three masked broadcasts a vector (bench/README.md);
// on Intel (uops.info's tables, not measured here) both load four quarters
// a vector, the inserts with two p015 uops and one p5, the masked
// broadcasts with three p05.
TVLAB_HEADS_INLINE void LoadTransposed16(const float* const* p, __m512* t) {
  __m512 x[kLanes];  // x[4q + m] quarter k: columns 4q .. 4q + 3 of row 4k + m
  for (int q = 0; q < 4; ++q)
    for (int m = 0; m < 4; ++m) {
      const __m256 lo =
          _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p[m] + 4 * q)), _mm_loadu_ps(p[4 + m] + 4 * q), 1);
      const __m256 hi = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p[8 + m] + 4 * q)),
                                             _mm_loadu_ps(p[12 + m] + 4 * q), 1);
      x[4 * q + m] = _mm512_castpd_ps(  // (insertf32x8 would need AVX512DQ)
          _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
    }
  for (int q = 0; q < 4; ++q) {
    const __m512d a0 = _mm512_castps_pd(_mm512_unpacklo_ps(x[4 * q], x[4 * q + 1]));
    const __m512d a1 = _mm512_castps_pd(_mm512_unpackhi_ps(x[4 * q], x[4 * q + 1]));
    const __m512d b0 = _mm512_castps_pd(_mm512_unpacklo_ps(x[4 * q + 2], x[4 * q + 3]));
    const __m512d b1 = _mm512_castps_pd(_mm512_unpackhi_ps(x[4 * q + 2], x[4 * q + 3]));
    t[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, b0));
    t[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, b0));
    t[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, b1));
    t[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, b1));
  }
}

// xt (rows, width) in lanes: lane l of vector r * width + e is
// x[(row[l] + r * step) * width + e] (0 past blk.lanes).
TVLAB_HEADS void IntoLanes(const float* x, const int64_t* row, int lanes, int64_t step, int64_t rows, int64_t width,
                           float* xt) {
  __m512 in[kLanes], t[kLanes];
  const bool whole = lanes == kLanes && width % kLanes == 0;  // no partial row or column
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; c += kLanes) {
      if (whole) {
        const float* p[kLanes];
        for (int l = 0; l < kLanes; ++l) p[l] = x + (row[l] + r * step) * width + c;
        LoadTransposed16(p, t);
      } else {
        const __mmask16 columns = Columns(c, width);
        for (int l = 0; l < kLanes; ++l)
          in[l] = _mm512_maskz_loadu_ps(l < lanes ? columns : 0, x + (row[l] + r * step) * width + c);
        Transpose16(in, t);
      }
      for (int e = 0; e < kLanes; ++e)
        if (c + e < width) _mm512_store_ps(xt + (r * width + c + e) * kLanes, t[e]);
    }
}

// The inverse of IntoLanes: lane l of xt's rows into x's rows row[l] + r *
// step (lanes < `lanes`).
TVLAB_HEADS void FromLanes(const float* xt, int64_t rows, int64_t width, const int64_t* row, int lanes, int64_t step,
                           float* x) {
  __m512 in[kLanes], t[kLanes];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; c += kLanes) {
      const __mmask16 columns = Columns(c, width);
      for (int e = 0; e < kLanes; ++e)
        in[e] = c + e < width ? _mm512_load_ps(xt + (r * width + c + e) * kLanes) : _mm512_setzero_ps();
      Transpose16(in, t);
      for (int l = 0; l < kLanes; ++l) {
        if (l >= lanes) break;
        _mm512_mask_storeu_ps(x + (row[l] + r * step) * width + c, columns, t[l]);
      }
    }
}

// Lane l of vector v of w (vectors of kLanes), broadcast: head l's weight.
TVLAB_HEADS_INLINE __m512 LaneOf(const float* w, int64_t v, int l) { return _mm512_set1_ps(w[v * kLanes + l]); }

// Rows i < t of one head's out (ldo apart, n columns) = scale_i * sum over
// j < kS of w_ij y_j: w_ij lane l of vector i * kS + j of w, y_j the head's
// rows j < s (ldy apart; 0 past s), scale_i lane l of vector i of `scale`
// (null: 1). The weighted values (forward) and dq (backward).
template <int kS>
TVLAB_HEADS void MixRows(const float* w, int l, const float* y, int64_t ldy, int64_t s, int64_t t, int64_t n,
                         const float* scale, float* out, int64_t ldo) {
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 columns = Columns(c, n);
    __m512 rows[kS];
    for (int j = 0; j < kS; ++j)  // rows past s: 0 (their address, a row's, never read)
      rows[j] = _mm512_maskz_loadu_ps(j < s ? columns : 0, y + std::min<int64_t>(j, s - 1) * ldy + c);
    for (int64_t i = 0; i < t; ++i) {
      __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};  // even and odd keys
      for (int j = 0; j < kS; ++j) acc[j % 2] = _mm512_fmadd_ps(LaneOf(w, i * kS + j, l), rows[j], acc[j % 2]);
      __m512 sum = _mm512_add_ps(acc[0], acc[1]);
      if (scale != nullptr) sum = _mm512_mul_ps(sum, LaneOf(scale, i, l));
      _mm512_mask_storeu_ps(out + i * ldo + c, columns, sum);
    }
  }
}

// Rows j < s of one head's out (ldo apart, n columns) = sum over i < t of
// w_ij x_i (x's rows ldx apart; w_ij as in MixRows), added to what is there
// where `add`: dk and dv (backward).
template <int kS>
TVLAB_HEADS void SumRows(const float* w, int l, const float* x, int64_t ldx, int64_t t, int64_t s, int64_t n, bool add,
                         float* out, int64_t ldo) {
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 columns = Columns(c, n);
    __m512 acc[kS];
    for (int j = 0; j < kS; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < t; ++i) {
      const __m512 row = _mm512_maskz_loadu_ps(columns, x + i * ldx + c);
      for (int j = 0; j < kS; ++j) acc[j] = _mm512_fmadd_ps(LaneOf(w, i * kS + j, l), row, acc[j]);
    }
    for (int j = 0; j < kS; ++j) {
      if (j >= s) break;
      float* p = out + j * ldo + c;
      _mm512_mask_storeu_ps(p, columns, add ? _mm512_add_ps(_mm512_maskz_loadu_ps(columns, p), acc[j]) : acc[j]);
    }
  }
}

}  // namespace heads_avx512
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX512_ROWS_H_
