// KeptBits, FactorsOfKeptBits and KeptMultiply (kept_mask_bits.h): a
// portable loop, on AVX2 one sign mask (a byte) a vector of 8, and on
// AVX-512 one compare mask (two bytes) a vector of 16.

#include "framework/backend/cpu_onednn/kept_mask_bits.h"

#include <immintrin.h>

#include <cstring>

#include "framework/core/cpu_features.h"

namespace tvlab {
namespace onednn {
namespace kept_bits_internal {

// The portable loops: every CPU's, and the vector loops' last part vector.
void KeptBitsPortable(const float* factors, int64_t n, uint8_t* kept) {
  for (int64_t i = 0; i < n; i += 8) {
    uint8_t bits = 0;
    for (int64_t b = 0; b < 8 && i + b < n; ++b) bits |= static_cast<uint8_t>(factors[i + b] != 0.0f) << b;
    kept[i / 8] = bits;
  }
}

void FactorsOfKeptBitsPortable(const uint8_t* kept, int64_t n, float keep_scale, float* factors) {
  for (int64_t i = 0; i < n; ++i) factors[i] = (kept[i / 8] >> (i % 8)) & 1 ? keep_scale : 0.0f;
}

void KeptMultiplyPortable(const uint8_t* kept, int64_t n, float keep_scale, const float* x, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * ((kept[i / 8] >> (i % 8)) & 1 ? keep_scale : 0.0f);
}

// The same on AVX-512: one compare mask (16 bits, two bytes) a vector.
__attribute__((target("avx512f"))) void KeptBitsAvx512(const float* factors, int64_t n, uint8_t* kept) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 bits = _mm512_cmp_ps_mask(_mm512_loadu_ps(factors + i), _mm512_setzero_ps(), _CMP_NEQ_UQ);
    std::memcpy(kept + i / 8, &bits, 2);  // little-endian: element i + b is bit b
  }
  if (i < n) KeptBitsPortable(factors + i, n - i, kept + i / 8);
}

// The factors of elements [i, i + 16) from their two bytes of kept bits.
__attribute__((target("avx512f"), always_inline)) inline __m512 FactorsAt16(const uint8_t* kept, int64_t i,
                                                                            __m512 scale) {
  __mmask16 bits;
  std::memcpy(&bits, kept + i / 8, 2);
  return _mm512_maskz_mov_ps(bits, scale);
}

__attribute__((target("avx512f"))) void FactorsOfKeptBitsAvx512(const uint8_t* kept, int64_t n, float keep_scale,
                                                                float* factors) {
  const __m512 scale = _mm512_set1_ps(keep_scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(factors + i, FactorsAt16(kept, i, scale));
  if (i < n) FactorsOfKeptBitsPortable(kept + i / 8, n - i, keep_scale, factors + i);
}

__attribute__((target("avx512f"))) void KeptMultiplyAvx512(const uint8_t* kept, int64_t n, float keep_scale,
                                                           const float* x, float* out) {
  const __m512 scale = _mm512_set1_ps(keep_scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), FactorsAt16(kept, i, scale)));
  if (i < n) KeptMultiplyPortable(kept + i / 8, n - i, keep_scale, x + i, out + i);
}

// The same on AVX2: a vector's compare as its eight sign bits (one byte),
// and back through a broadcast of the byte tested against each lane's bit.
__attribute__((target("avx2"))) void KeptBitsAvx2(const float* factors, int64_t n, uint8_t* kept) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 kept_lanes = _mm256_cmp_ps(_mm256_loadu_ps(factors + i), _mm256_setzero_ps(), _CMP_NEQ_UQ);
    kept[i / 8] = static_cast<uint8_t>(_mm256_movemask_ps(kept_lanes));
  }
  if (i < n) KeptBitsPortable(factors + i, n - i, kept + i / 8);
}

// The factors of elements [i, i + 8) from their byte of kept bits: the
// byte broadcast and tested against each lane's bit.
__attribute__((target("avx2"), always_inline)) inline __m256 FactorsAt8(const uint8_t* kept, int64_t i, __m256 scale) {
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i bits = _mm256_and_si256(_mm256_set1_epi32(kept[i / 8]), lane_bits);
  const __m256 lanes = _mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, lane_bits));  // all ones where kept
  return _mm256_and_ps(lanes, scale);
}

__attribute__((target("avx2"))) void FactorsOfKeptBitsAvx2(const uint8_t* kept, int64_t n, float keep_scale,
                                                           float* factors) {
  const __m256 scale = _mm256_set1_ps(keep_scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(factors + i, FactorsAt8(kept, i, scale));
  if (i < n) FactorsOfKeptBitsPortable(kept + i / 8, n - i, keep_scale, factors + i);
}

__attribute__((target("avx2"))) void KeptMultiplyAvx2(const uint8_t* kept, int64_t n, float keep_scale, const float* x,
                                                      float* out) {
  const __m256 scale = _mm256_set1_ps(keep_scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), FactorsAt8(kept, i, scale)));
  if (i < n) KeptMultiplyPortable(kept + i / 8, n - i, keep_scale, x + i, out + i);
}

}  // namespace kept_bits_internal

void KeptBits(const float* factors, int64_t n, uint8_t* kept) {
  namespace k = kept_bits_internal;
  static const auto kernel = CpuHasAvx512f() ? k::KeptBitsAvx512 : CpuHasAvx2() ? k::KeptBitsAvx2 : k::KeptBitsPortable;
  kernel(factors, n, kept);
}

void FactorsOfKeptBits(const uint8_t* kept, int64_t n, float keep_scale, float* factors) {
  namespace k = kept_bits_internal;
  static const auto kernel = CpuHasAvx512f() ? k::FactorsOfKeptBitsAvx512
                             : CpuHasAvx2()  ? k::FactorsOfKeptBitsAvx2
                                             : k::FactorsOfKeptBitsPortable;
  kernel(kept, n, keep_scale, factors);
}

void KeptMultiply(const uint8_t* kept, int64_t n, float keep_scale, const float* x, float* out) {
  namespace k = kept_bits_internal;
  static const auto kernel = CpuHasAvx512f() ? k::KeptMultiplyAvx512
                             : CpuHasAvx2()  ? k::KeptMultiplyAvx2
                                             : k::KeptMultiplyPortable;
  kernel(kept, n, keep_scale, x, out);
}

}  // namespace onednn
}  // namespace tvlab
