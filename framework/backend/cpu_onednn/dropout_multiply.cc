// DropoutMultiply (dropout_multiply.h): a portable loop, on AVX2 eight
// elements a vector (a byte of kept bits), on AVX-512 sixteen (two bytes).

#include "framework/backend/cpu_onednn/dropout_multiply.h"

#include <immintrin.h>

#include <cstring>

#include "framework/core/cpu_features.h"

namespace tvlab {
namespace onednn {
namespace dropout_multiply_internal {

// The portable loop: every CPU's, and the vector loops' last part vector
// (which starts at a multiple of 8: a whole word of draws and a whole byte
// of kept bits).
void DropoutMultiplyPortable(const uint32_t* words, int64_t n, uint32_t threshold, float keep_scale, const float* x,
                             float* out, uint8_t* kept) {
  for (int64_t i = 0; i < n; i += 8) {
    uint8_t bits = 0;
    for (int64_t b = 0; b < 8 && i + b < n; ++b) {
      const uint32_t draw = (words[(i + b) / 2] >> (16 * ((i + b) & 1))) & 0xFFFFu;
      const float factor = draw < threshold ? 0.0f : keep_scale;
      out[i + b] = x[i + b] * factor;
      bits |= static_cast<uint8_t>(factor != 0.0f) << b;
    }
    if (kept != nullptr) kept[i / 8] = bits;
  }
}

// (GCC 12's _mm512_cvtepu16_epi32 starts from _mm512_undefined_epi32() and
// warns that it "may be used uninitialized": a false positive in the
// header.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// AVX-512: sixteen draws (eight words: on a little-endian CPU each word's
// low half first, the elements' order) widened to 32 bits, one unsigned
// compare, its mask both the factors' lanes and the kept bits.
__attribute__((target("avx512f"))) void DropoutMultiplyAvx512(const uint32_t* words, int64_t n, uint32_t threshold,
                                                              float keep_scale, const float* x, float* out,
                                                              uint8_t* kept) {
  const __m512 scale = _mm512_set1_ps(keep_scale);
  const __m512i bound = _mm512_set1_epi32(static_cast<int>(threshold));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i d = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i / 2)));
    const __mmask16 keep = _mm512_cmpge_epu32_mask(d, bound);
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_maskz_mov_ps(keep, scale)));
    if (kept != nullptr) std::memcpy(kept + i / 8, &keep, 2);  // little-endian: element i + b is bit b
  }
  if (i < n)
    DropoutMultiplyPortable(words + i / 2, n - i, threshold, keep_scale, x + i, out + i,
                            kept == nullptr ? nullptr : kept + i / 8);
}
#pragma GCC diagnostic pop

// AVX2: eight draws widened to 32 bits and compared signed (draws and
// threshold are at most 65536), the kept lanes' sign bits one byte.
__attribute__((target("avx2"))) void DropoutMultiplyAvx2(const uint32_t* words, int64_t n, uint32_t threshold,
                                                         float keep_scale, const float* x, float* out, uint8_t* kept) {
  const __m256 scale = _mm256_set1_ps(keep_scale);
  const __m256i bound = _mm256_set1_epi32(static_cast<int>(threshold));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i d = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(words + i / 2)));
    const __m256 dropped = _mm256_castsi256_ps(_mm256_cmpgt_epi32(bound, d));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_andnot_ps(dropped, scale)));
    if (kept != nullptr) kept[i / 8] = static_cast<uint8_t>(~_mm256_movemask_ps(dropped));
  }
  if (i < n)
    DropoutMultiplyPortable(words + i / 2, n - i, threshold, keep_scale, x + i, out + i,
                            kept == nullptr ? nullptr : kept + i / 8);
}

}  // namespace dropout_multiply_internal

void DropoutMultiply(const uint32_t* words, int64_t n, uint32_t threshold, float keep_scale, const float* x, float* out,
                     uint8_t* kept) {
  namespace k = dropout_multiply_internal;
  static const auto kernel = CpuHasAvx512f() ? k::DropoutMultiplyAvx512
                             : CpuHasAvx2()  ? k::DropoutMultiplyAvx2
                                             : k::DropoutMultiplyPortable;
  kernel(words, n, threshold, keep_scale, x, out, kept);
}

}  // namespace onednn
}  // namespace tvlab
