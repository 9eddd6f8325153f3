// KeptBits and FactorsOfKeptBits (kept_mask_bits.h): a portable loop, and
// on AVX-512 one compare mask (two bytes) a vector of 16.

#include "framework/backend/cpu_onednn/kept_mask_bits.h"

#include <immintrin.h>

#include <cstring>

#include "framework/core/cpu_features.h"

namespace tvlab {
namespace onednn {
namespace {

// The portable loops: every CPU's, and the AVX-512 loops' last part vector.
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

// The same on AVX-512: one compare mask (16 bits, two bytes) a vector.
__attribute__((target("avx512f"))) void KeptBitsAvx512(const float* factors, int64_t n, uint8_t* kept) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 bits = _mm512_cmp_ps_mask(_mm512_loadu_ps(factors + i), _mm512_setzero_ps(), _CMP_NEQ_UQ);
    std::memcpy(kept + i / 8, &bits, 2);  // little-endian: element i + b is bit b
  }
  if (i < n) KeptBitsPortable(factors + i, n - i, kept + i / 8);
}

__attribute__((target("avx512f"))) void FactorsOfKeptBitsAvx512(const uint8_t* kept, int64_t n, float keep_scale,
                                                               float* factors) {
  const __m512 scale = _mm512_set1_ps(keep_scale);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __mmask16 bits;
    std::memcpy(&bits, kept + i / 8, 2);
    _mm512_storeu_ps(factors + i, _mm512_maskz_mov_ps(bits, scale));
  }
  if (i < n) FactorsOfKeptBitsPortable(kept + i / 8, n - i, keep_scale, factors + i);
}

}  // namespace

void KeptBits(const float* factors, int64_t n, uint8_t* kept) {
  static const bool avx512 = CpuHasAvx512f();
  return avx512 ? KeptBitsAvx512(factors, n, kept) : KeptBitsPortable(factors, n, kept);
}

void FactorsOfKeptBits(const uint8_t* kept, int64_t n, float keep_scale, float* factors) {
  static const bool avx512 = CpuHasAvx512f();
  return avx512 ? FactorsOfKeptBitsAvx512(kept, n, keep_scale, factors)
                : FactorsOfKeptBitsPortable(kept, n, keep_scale, factors);
}

}  // namespace onednn
}  // namespace tvlab
