#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_ROWS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_ROWS_H_

// The row loops of the AVX-512 tiled attention kernel
// (tiled_attention_avx512.h): packing a key/value head's rows, a row's
// visible lanes, its exponentials, maximum and dropout factors. Only
// tiled_attention_avx512.cc includes it.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"
#include "framework/backend/fused_attention.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace onednn {
namespace tiled_avx512 {

using short_avx512::Exp;
using short_avx512::kLanes;
using short_avx512::Transpose16;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// n rounded up to whole vectors.
inline int64_t RoundUp(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// xt (width, sp) = the s rows of x (width wide, ldx apart) transposed;
// columns [s, sp) zero. width is a multiple of 16.
TVLAB_AVX512 void PackTransposed(const float* x, int64_t ldx, int64_t s, int64_t width, float* xt, int64_t sp) {
  for (int64_t j0 = 0; j0 < sp; j0 += kLanes)
    for (int64_t c = 0; c < width; c += kLanes) {
      __m512 rows[kLanes], columns[kLanes];
      for (int64_t j = 0; j < kLanes; ++j)
        rows[j] = j0 + j < s ? _mm512_loadu_ps(x + (j0 + j) * ldx + c) : _mm512_setzero_ps();
      Transpose16(rows, columns);
      for (int e = 0; e < kLanes; ++e) _mm512_storeu_ps(xt + (c + e) * sp + j0, columns[e]);
    }
}

// The s rows of x (width wide, ldx apart) into y (rows ldy apart); width is
// a multiple of 16 (a vector loop: memcpy of each 128-byte row took 7% of
// the kernel's time at the GPT config's shape).
TVLAB_AVX512 void CopyRows(const float* x, int64_t ldx, int64_t s, int64_t width, float* y, int64_t ldy) {
  for (int64_t j = 0; j < s; ++j)
    for (int64_t c = 0; c < width; c += kLanes) _mm512_storeu_ps(y + j * ldy + c, _mm512_loadu_ps(x + j * ldx + c));
}

// The lanes of columns [c, c + 16) inside [first, end).
TVLAB_AVX512_INLINE __mmask16 Inside(int64_t c, int64_t first, int64_t end) {
  const int64_t lo = std::clamp<int64_t>(first - c, 0, kLanes), hi = std::clamp<int64_t>(end - c, 0, kLanes);
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// Row r of a block's scores s (columns [c0, c1)) into weights: exp(s -
// shift) on the row's visible keys [first, end), 0 on the rest. Returns
// their sum.
TVLAB_AVX512 float ExpRow(float* s, int64_t c0, int64_t c1, int64_t first, int64_t end, float shift) {
  const int64_t v0 = first / kLanes * kLanes, v1 = RoundUp(end);  // the vectors with a visible key
  const __m512 m = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = c0; c < v0; c += kLanes) _mm512_storeu_ps(s + c, _mm512_setzero_ps());
  for (int64_t c = v0; c < v1; c += kLanes) {
    const __mmask16 live = Inside(c, first, end);
    const __m512 e = _mm512_maskz_mov_ps(live, Exp(_mm512_sub_ps(_mm512_loadu_ps(s + c), m)));
    _mm512_storeu_ps(s + c, e);
    sum = _mm512_add_ps(sum, e);
  }
  for (int64_t c = v1; c < c1; c += kLanes) _mm512_storeu_ps(s + c, _mm512_setzero_ps());
  return _mm512_reduce_add_ps(sum);
}

// The largest score of row s on [first, end) (first < end).
TVLAB_AVX512 float RowMax(const float* s, int64_t first, int64_t end) {
  __m512 m = _mm512_set1_ps(kNegInf);
  for (int64_t c = first / kLanes * kLanes; c < end; c += kLanes)
    m = _mm512_mask_max_ps(m, Inside(c, first, end), m, _mm512_loadu_ps(s + c));
  return _mm512_reduce_max_ps(m);
}

// keep[j - first] for keys j in [first, end) of weight row `row` (query i
// of head (b, h) is row (b H + h) T + i): the dropout factors, 0 or
// 1 / (1 - p), of Backend::DropoutMask's (B, H, T, S) order, the factors
// the sgemm kernel and the reference draw.
inline void KeepRow(const FusedAttentionDesc& d, int64_t row, int64_t first, int64_t end, float* keep,
                    std::vector<uint32_t>& words) {
  DropoutFactors(*d.dropout_stream, d.dropout, row * d.keys + first, end - first, keep, words);
}

// s[j] *= keep[j] for j in [first, end).
TVLAB_AVX512 void MultiplyColumns(float* s, const float* keep, int64_t first, int64_t end) {
  int64_t j = first;
  for (; j + kLanes <= end; j += kLanes)
    _mm512_storeu_ps(s + j, _mm512_mul_ps(_mm512_loadu_ps(s + j), _mm512_loadu_ps(keep + j)));
  const __mmask16 tail = Inside(j, j, end);
  const __m512 product = _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, s + j), _mm512_maskz_loadu_ps(tail, keep + j));
  _mm512_mask_storeu_ps(s + j, tail, product);
}

}  // namespace tiled_avx512
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_ROWS_H_
