#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX2_ROWS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX2_ROWS_H_

// The vector steps of the heads-in-lanes short attention kernel's AVX2
// build (short_attention_heads_avx2.cc) that are not a row of the softmax:
// exp and log over eight lanes, a block's rows into lanes and back (8 x 8
// transposes), and the products that read the weights in lanes one head at
// a time (the weighted values, dq, dk, dv). Each is the AVX-512 build's
// step (short_attention_avx512_lanes.h, short_attention_heads_avx512_rows.h)
// on eight lanes with the same IEEE operations in each lane, so the same
// bits. Only that file includes it.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "framework/backend/cpu_onednn/transpose8_avx2.h"

namespace tvlab {
namespace onednn {
namespace heads_avx2 {

#define TVLAB_HEADS_AVX2 __attribute__((target("avx2,fma"))) inline
#define TVLAB_HEADS_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

constexpr int kLanes = 8;  // query heads a block

// The lanes of columns [c, c + 8) that lie below n.
TVLAB_HEADS_AVX2_INLINE __m256i Columns(int64_t c, int64_t n) {
  const int below = static_cast<int>(std::min<int64_t>(kLanes, n - c));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(below), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Columns [c, c + 8) of a row at p: a plain load or store where all eight
// lie below n (`whole`), else masked by `columns` (Columns(c, n)). On AMD
// CPUs a masked store (vmaskmovps) is many times slower than a plain one.
TVLAB_HEADS_AVX2_INLINE __m256 LoadColumns(const float* p, __m256i columns, bool whole) {
  return whole ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, columns);
}
TVLAB_HEADS_AVX2_INLINE void StoreColumns(float* p, __m256i columns, bool whole, __m256 x) {
  if (whole) return _mm256_storeu_ps(p, x);
  _mm256_maskstore_ps(p, columns, x);
}

// exp(x) in every lane: the AVX-512 build's Exp (clamp to [-87.3, 88.7],
// Cody-Waite, Cephes' polynomial), with its final scalef(y, n) = y 2^n as
// two multiplies by 2^(n >> 1) and 2^(n - (n >> 1)): each exact (every
// factor and the result are normal floats for n in [-126, 128]), so the
// same bits.
TVLAB_HEADS_AVX2_INLINE __m256 Exp(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(e, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 low = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 high = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, low), high);
}

// log(x) in every lane (x > 0 normal): the AVX-512 build's Log, with
// getmant and getexp's x = m 2^e, m in [0.75, 1.5), taken from the bits.
TVLAB_HEADS_AVX2_INLINE __m256 Log(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i biased = _mm256_srli_epi32(bits, 23);  // x > 0: no sign bit
  const __m256 one_f = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x3F800000)));
  const __m256 halve = _mm256_cmp_ps(one_f, _mm256_set1_ps(1.5f), _CMP_GE_OQ);  // m = 1.f / 2, e + 1
  const __m256 m = _mm256_blendv_ps(one_f, _mm256_mul_ps(one_f, _mm256_set1_ps(0.5f)), halve);
  __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(biased, _mm256_set1_epi32(127)));
  e = _mm256_add_ps(e, _mm256_and_ps(halve, _mm256_set1_ps(1.0f)));
  const __m256 s = _mm256_div_ps(_mm256_sub_ps(m, _mm256_set1_ps(1.0f)), _mm256_add_ps(m, _mm256_set1_ps(1.0f)));
  const __m256 s2 = _mm256_mul_ps(s, s);
  __m256 p = _mm256_set1_ps(2.0f / 9.0f);
  for (const float c : {2.0f / 7.0f, 2.0f / 5.0f, 2.0f / 3.0f}) p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(c));
  const __m256 log_m = _mm256_fmadd_ps(_mm256_mul_ps(p, s2), s, _mm256_add_ps(s, s));
  return _mm256_fmadd_ps(e, _mm256_set1_ps(0.693147180559945309f), log_m);
}

// xt (rows, width) in lanes: lane l of vector r * width + e is
// x[(row[l] + r * step) * width + e] (0 past `lanes`).
TVLAB_HEADS_AVX2 void IntoLanes(const float* x, const int64_t* row, int lanes, int64_t step, int64_t rows,
                                int64_t width, float* xt) {
  __m256 in[kLanes], t[kLanes];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; c += kLanes) {
      const __m256i columns = Columns(c, width);
      const bool whole = c + kLanes <= width;
      for (int l = 0; l < kLanes; ++l)
        in[l] = l < lanes ? LoadColumns(x + (row[l] + r * step) * width + c, columns, whole) : _mm256_setzero_ps();
      Transpose8(in, t);
      for (int e = 0; e < kLanes; ++e)
        if (c + e < width) _mm256_store_ps(xt + (r * width + c + e) * kLanes, t[e]);
    }
}

// The inverse of IntoLanes: lane l of xt's rows into x's rows row[l] + r *
// step (lanes < `lanes`).
TVLAB_HEADS_AVX2 void FromLanes(const float* xt, int64_t rows, int64_t width, const int64_t* row, int lanes,
                                int64_t step, float* x) {
  __m256 in[kLanes], t[kLanes];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; c += kLanes) {
      const __m256i columns = Columns(c, width);
      const bool whole = c + kLanes <= width;
      for (int e = 0; e < kLanes; ++e)
        in[e] = c + e < width ? _mm256_load_ps(xt + (r * width + c + e) * kLanes) : _mm256_setzero_ps();
      Transpose8(in, t);
      for (int l = 0; l < lanes; ++l) StoreColumns(x + (row[l] + r * step) * width + c, columns, whole, t[l]);
    }
}

// Lane l of vector v of w (vectors of kLanes), broadcast: head l's weight.
TVLAB_HEADS_AVX2_INLINE __m256 LaneOf(const float* w, int64_t v, int l) {
  return _mm256_broadcast_ss(w + v * kLanes + l);
}

// Rows i < t of one head's out (ldo apart, n columns) = scale_i * sum over
// j < kS of w_ij y_j: w_ij lane l of vector i * kS + j of w, y_j the head's
// rows j < s (ldy apart; 0 past s), scale_i lane l of vector i of `scale`
// (null: 1). The weighted values (forward) and dq (backward).
template <int kS>
TVLAB_HEADS_AVX2 void MixRows(const float* w, int l, const float* y, int64_t ldy, int64_t s, int64_t t, int64_t n,
                              const float* scale, float* out, int64_t ldo) {
  for (int64_t c = 0; c < n; c += kLanes) {
    const __m256i columns = Columns(c, n);
    const bool whole = c + kLanes <= n;
    __m256 rows[kS];
    for (int j = 0; j < kS; ++j)  // rows past s: 0
      rows[j] = j < s ? LoadColumns(y + j * ldy + c, columns, whole) : _mm256_setzero_ps();
    for (int64_t i = 0; i < t; ++i) {
      __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  // even and odd keys
      for (int j = 0; j < kS; ++j) acc[j % 2] = _mm256_fmadd_ps(LaneOf(w, i * kS + j, l), rows[j], acc[j % 2]);
      __m256 sum = _mm256_add_ps(acc[0], acc[1]);
      if (scale != nullptr) sum = _mm256_mul_ps(sum, LaneOf(scale, i, l));
      StoreColumns(out + i * ldo + c, columns, whole, sum);
    }
  }
}

// Rows j < s of one head's out (ldo apart, n columns) = sum over i < t of
// w_ij x_i (x's rows ldx apart; w_ij as in MixRows), added to what is there
// where `add`: dk and dv (backward).
template <int kS>
TVLAB_HEADS_AVX2 void SumRows(const float* w, int l, const float* x, int64_t ldx, int64_t t, int64_t s, int64_t n,
                              bool add, float* out, int64_t ldo) {
  for (int64_t c = 0; c < n; c += kLanes) {
    const __m256i columns = Columns(c, n);
    const bool whole = c + kLanes <= n;
    __m256 acc[kS];
    for (int j = 0; j < kS; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < t; ++i) {
      const __m256 row = LoadColumns(x + i * ldx + c, columns, whole);
      for (int j = 0; j < kS; ++j) acc[j] = _mm256_fmadd_ps(LaneOf(w, i * kS + j, l), row, acc[j]);
    }
    for (int j = 0; j < kS; ++j) {
      if (j >= s) break;
      float* p = out + j * ldo + c;
      StoreColumns(p, columns, whole, add ? _mm256_add_ps(LoadColumns(p, columns, whole), acc[j]) : acc[j]);
    }
  }
}

}  // namespace heads_avx2
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX2_ROWS_H_
