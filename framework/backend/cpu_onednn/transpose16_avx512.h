#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSE16_AVX512_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSE16_AVX512_H_

// A 16 x 16 float transpose in AVX-512 registers, and the lane mask of a
// partial block: the attention kernels' keys into lanes
// (short_attention_avx512_lanes.h, tiled attention) and a Linear's weight
// into (k, n) rows for the small-model GEMM loop (medium_gemm.cc).

#include <immintrin.h>

#include <cstdint>

namespace tvlab {
namespace onednn {

// The lanes of columns [c, c + 16) that lie below n.
__attribute__((target("avx512f"), always_inline)) inline __mmask16 Columns(int64_t c, int64_t n) {
  return n - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
}

// t[e] lane j = r[j] lane e: a 16 x 16 transpose in four rounds of 16
// shuffles.
__attribute__((target("avx512f"), always_inline)) inline void Transpose16(const __m512* r, __m512* t) {
  __m512 a[16], b[16], c[16];
  for (int k = 0; k < 8; ++k) {
    a[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k)  // b[4k + col]: columns col, col + 4, + 8, + 12 of rows 4k .. 4k + 3
    for (int half = 0; half < 2; ++half) {
      const __m512d x = _mm512_castps_pd(a[4 * k + half]), y = _mm512_castps_pd(a[4 * k + half + 2]);
      b[4 * k + 2 * half] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
      b[4 * k + 2 * half + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
    }
  for (int k = 0; k < 4; ++k)
    for (int rows = 0; rows < 16; rows += 8) {
      c[rows + k] = _mm512_shuffle_f32x4(b[rows + k], b[rows + k + 4], 0x88);
      c[rows + k + 4] = _mm512_shuffle_f32x4(b[rows + k], b[rows + k + 4], 0xDD);
    }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(c[k], c[8 + k], 0x88);
    t[k + 8] = _mm512_shuffle_f32x4(c[k], c[8 + k], 0xDD);
    t[k + 4] = _mm512_shuffle_f32x4(c[k + 4], c[12 + k], 0x88);
    t[k + 12] = _mm512_shuffle_f32x4(c[k + 4], c[12 + k], 0xDD);
  }
}

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSE16_AVX512_H_
