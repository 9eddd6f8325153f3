#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_AVX512_LANES_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_AVX512_LANES_H_

// The vector steps of the AVX-512 short attention kernel
// (short_attention_avx512.cc): exp and log over 16 lanes, the key/query
// products with a key in each lane, the weighted sums, eight rows' maxima and
// sums folded into one vector, and a 16 x 16 transpose. Only
// short_attention_avx512.cc includes it.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/transpose16_avx512.h"

namespace tvlab {
namespace onednn {
namespace short_avx512 {

#define TVLAB_AVX512 __attribute__((target("avx512f"))) inline
#define TVLAB_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

constexpr int kLanes = 16;  // key j of a query row in lane j
static_assert(kLanes == kShortAttentionKeys, "one key a lane");
constexpr int kRows = 8;  // query rows each step runs for together
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp(x) in every lane to about 2 ulp: x - n ln 2 in two steps (Cody-Waite),
// Cephes' degree-6 polynomial for expf on the rest, times 2^n by scalef.
// x is clamped to [-87.3, 88.7], so no lane is ever a subnormal (a
// subnormal result costs a microcode assist of ~100 cycles; this loop took
// 2.5x longer with hidden keys' -inf underflowing): exp(-87.3) = 1.2e-38 is
// the least it returns, and callers zero hidden keys by mask.
TVLAB_AVX512_INLINE __m512 Exp(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

// acc[r] lane j = row r of x (R rows of width, ldx apart) . column j of xt
// (width, kLanes).
template <int R>
TVLAB_AVX512_INLINE void Products(const float* x, int64_t ldx, int64_t width, const float* xt, __m512* acc) {
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t e = 0; e < width; ++e) {
    const __m512 column = _mm512_loadu_ps(xt + e * kLanes);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[r * ldx + e]), column, acc[r]);
  }
}

// out row r = (sum over j in [first, end) of w[r][j] * rows[j]) * scale[r]
// (scale null: 1) for R rows of n: w (R, kLanes), rows j ldr apart, out
// rows ldo apart.
template <int R>
TVLAB_AVX512_INLINE void WeightedRows(const float* w, const float* rows, int64_t ldr, int64_t first, int64_t end,
                                      int64_t n, const float* scale, float* out, int64_t ldo) {
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = Columns(c, n);
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t j = first; j < end; ++j) {
      const __m512 row = _mm512_maskz_loadu_ps(lanes, rows + j * ldr + c);
      for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(w[r * kLanes + j]), row, acc[r]);
    }
    for (int r = 0; r < R; ++r)
      _mm512_mask_storeu_ps(out + r * ldo + c, lanes,
                            scale == nullptr ? acc[r] : _mm512_mul_ps(acc[r], _mm512_set1_ps(scale[r])));
  }
}

// rows[j0 + jj] += sum over i < t of w[i][j0 + jj] * x[i] for jj < J: the J
// sums of a column block in registers over every i (w (t, kLanes); x's t
// rows of n ldx apart, rows' ldr apart).
template <int J>
TVLAB_AVX512_INLINE void AddWeightedColumns(const float* w, const float* x, int64_t ldx, int64_t t, int64_t n,
                                            int64_t j0, bool accumulate, float* rows, int64_t ldr) {
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = Columns(c, n);
    __m512 acc[J];
    for (int jj = 0; jj < J; ++jj)
      acc[jj] = accumulate ? _mm512_maskz_loadu_ps(lanes, rows + (j0 + jj) * ldr + c) : _mm512_setzero_ps();
    for (int64_t i = 0; i < t; ++i) {
      const __m512 xi = _mm512_maskz_loadu_ps(lanes, x + i * ldx + c);
      for (int jj = 0; jj < J; ++jj)
        acc[jj] = _mm512_fmadd_ps(_mm512_set1_ps(w[i * kLanes + j0 + jj]), xi, acc[jj]);
    }
    for (int jj = 0; jj < J; ++jj) _mm512_mask_storeu_ps(rows + (j0 + jj) * ldr + c, lanes, acc[jj]);
  }
}

// The same for every key j < s, eight at a time, then one at a time; with
// accumulate false, rows = the sums.
TVLAB_AVX512 void AddWeightedRowsToKeys(const float* w, const float* x, int64_t ldx, int64_t t, int64_t n,
                                        int64_t s, bool accumulate, float* rows, int64_t ldr) {
  int64_t j = 0;
  for (; j + 8 <= s; j += 8) AddWeightedColumns<8>(w, x, ldx, t, n, j, accumulate, rows, ldr);
  for (; j < s; ++j) AddWeightedColumns<1>(w, x, ldx, t, n, j, accumulate, rows, ldr);
}

using onednn::Transpose16;  // transpose16_avx512.h

// TransposeKeys for at most eight keys: two rounds of unpacks put four
// keys' columns in each 128-bit lane, and one two-source permute a row
// gathers the two lanes of its column (32 shuffles for 16 columns instead
// of 64; lanes 8-15 zero).
TVLAB_AVX512 void TransposeEightKeys(const float* x, int64_t ldx, int64_t s, int64_t width, float* xt) {
  for (int64_t c = 0; c < width; c += kLanes) {
    const __mmask16 lanes = Columns(c, width);
    __m512 r[8], a[8], b[8];
    for (int64_t j = 0; j < 8; ++j) r[j] = j < s ? _mm512_maskz_loadu_ps(lanes, x + j * ldx + c) : _mm512_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      a[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      a[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int g = 0; g < 2; ++g)  // b[4g + m] lane L: column 4L + m of keys 4g .. 4g + 3
      for (int half = 0; half < 2; ++half) {
        const __m512d lo = _mm512_castps_pd(a[4 * g + half]), hi = _mm512_castps_pd(a[4 * g + half + 2]);
        b[4 * g + 2 * half] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
        b[4 * g + 2 * half + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
      }
    for (int64_t e = 0; e < std::min<int64_t>(kLanes, width - c); ++e) {
      const int lane = static_cast<int>(e / 4), m = static_cast<int>(e % 4);
      const __m512i pick = _mm512_setr_epi32(4 * lane, 4 * lane + 1, 4 * lane + 2, 4 * lane + 3, 16 + 4 * lane,
                                             17 + 4 * lane, 18 + 4 * lane, 19 + 4 * lane, 0, 0, 0, 0, 0, 0, 0, 0);
      _mm512_storeu_ps(xt + (c + e) * kLanes, _mm512_maskz_permutex2var_ps(0x00FF, b[m], pick, b[4 + m]));
    }
  }
}

// xt (width, kLanes): lane j of row e = x[j * ldx + e] for j < s, else 0.
TVLAB_AVX512 void TransposeKeys(const float* x, int64_t ldx, int64_t s, int64_t width, float* xt) {
  if (s <= 8) return TransposeEightKeys(x, ldx, s, width, xt);
  for (int64_t c = 0; c < width; c += kLanes) {
    const __mmask16 lanes = Columns(c, width);
    __m512 rows[kLanes], columns[kLanes];
    for (int64_t j = 0; j < kLanes; ++j)
      rows[j] = j < s ? _mm512_maskz_loadu_ps(lanes, x + j * ldx + c) : _mm512_setzero_ps();
    Transpose16(rows, columns);
    for (int64_t e = 0; e < std::min<int64_t>(kLanes, width - c); ++e) _mm512_storeu_ps(xt + (c + e) * kLanes, columns[e]);
  }
}


// log(x) in every lane (x > 0 finite) to a few ulp: x = m 2^e with m in
// [0.75, 1.5), log m = 2 atanh((m - 1) / (m + 1)) by its series to s^9.
TVLAB_AVX512_INLINE __m512 Log(__m512 x) {
  const __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_src);
  __m512 e = _mm512_getexp_ps(x);  // floor(log2 x); one more where m was halved below 1
  e = _mm512_mask_add_ps(e, _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.0f), _CMP_LT_OQ), e, _mm512_set1_ps(1.0f));
  const __m512 s = _mm512_div_ps(_mm512_sub_ps(m, _mm512_set1_ps(1.0f)), _mm512_add_ps(m, _mm512_set1_ps(1.0f)));
  const __m512 s2 = _mm512_mul_ps(s, s);
  __m512 p = _mm512_set1_ps(2.0f / 9.0f);
  for (const float c : {2.0f / 7.0f, 2.0f / 5.0f, 2.0f / 3.0f}) p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(c));
  const __m512 log_m = _mm512_fmadd_ps(_mm512_mul_ps(p, s2), s, _mm512_add_ps(s, s));
  return _mm512_fmadd_ps(e, _mm512_set1_ps(0.693147180559945309f), log_m);
}

// Eight rows' reductions at once: Fold(x) returns a vector whose lane
// kRowLane[r] holds op over the 16 lanes of x[r] (the rows folded in pairs,
// halves, quarters; 23 operations for the eight).
constexpr int kRowLane[kRows] = {0, 4, 8, 12, 2, 6, 10, 14};
template <typename Op>
TVLAB_AVX512_INLINE __m512 Fold(const __m512* x, Op op) {
  __m512 y[4], z[2];
  for (int p = 0; p < 4; ++p)  // lanes 0-7: row 2p's halves folded; 8-15: row 2p + 1's
    y[p] = op(_mm512_shuffle_f32x4(x[2 * p], x[2 * p + 1], 0x44), _mm512_shuffle_f32x4(x[2 * p], x[2 * p + 1], 0xEE));
  for (int p = 0; p < 2; ++p)  // four lanes a row: rows 4p .. 4p + 3
    z[p] = op(_mm512_shuffle_f32x4(y[2 * p], y[2 * p + 1], 0x88), _mm512_shuffle_f32x4(y[2 * p], y[2 * p + 1], 0xDD));
  // block b of four lanes: two of row b, two of row b + 4; then each pair summed
  const __m512 w = op(_mm512_shuffle_ps(z[0], z[1], 0x44), _mm512_shuffle_ps(z[0], z[1], 0xEE));
  return op(w, _mm512_shuffle_ps(w, w, 0xB1));
}
struct MaxOf {
  TVLAB_AVX512_INLINE __m512 operator()(__m512 a, __m512 b) const { return _mm512_max_ps(a, b); }
};
struct SumOf {
  TVLAB_AVX512_INLINE __m512 operator()(__m512 a, __m512 b) const { return _mm512_add_ps(a, b); }
};

// Row r's value of a Fold, in every lane.
TVLAB_AVX512_INLINE __m512 RowValue(__m512 folded, int r) {
  return _mm512_permutexvar_ps(_mm512_set1_epi32(kRowLane[r]), folded);
}

// The eight rows' values of a Fold, in row order, into out[0, 8).
TVLAB_AVX512_INLINE void StoreRows(__m512 folded, float* out) {
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  _mm512_mask_storeu_ps(out, 0xFF, _mm512_permutexvar_ps(order, folded));
}

// out[r] = row r of a . row r of b for R rows of n (ld apart): the eight
// rows' sums folded together when R is eight.
template <int R>
TVLAB_AVX512_INLINE void RowDots(const float* a, const float* b, int64_t ld, int64_t n, float* out) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += kLanes) {
    const __mmask16 lanes = Columns(c, n);
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, a + r * ld + c), _mm512_maskz_loadu_ps(lanes, b + r * ld + c),
                               acc[r]);
  }
  if constexpr (R == kRows) {
    StoreRows(Fold(acc, SumOf{}), out);
  } else {
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
  }
}

}  // namespace short_avx512
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_AVX512_LANES_H_
