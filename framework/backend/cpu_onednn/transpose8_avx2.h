#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSE8_AVX2_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSE8_AVX2_H_

// An 8 x 8 float transpose in AVX2 registers (transpose16_avx512.h's on
// AVX2 CPUs): the AVX2 short attention's rows into lanes
// (short_attention_heads_avx2_rows.h) and LayerNorm's row sums
// (layer_norm_avx2.cc).

#include <immintrin.h>

namespace tvlab {
namespace onednn {

// c[e] lane j = r[j] lane e: pairs interleaved, then quadruples, then the
// 128-bit halves swapped between rows i and i + 4.
__attribute__((target("avx2"), always_inline)) inline void Transpose8(const __m256* r, __m256* c) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    c[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    c[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSE8_AVX2_H_
