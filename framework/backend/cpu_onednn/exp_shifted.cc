// ExpShifted: glibc's expf (__expf_fma) eight or four lanes at a time
// (exp_shifted.h).

#include "framework/backend/cpu_onednn/exp_shifted.h"

#include <immintrin.h>

#include <cmath>

#include "framework/core/cpu_features.h"

namespace tvlab {
namespace onednn {
namespace {

// kTable[i] = the bits of 2^(i / 32) (rounded to the nearest double) minus
// i << 47, so that adding k << 47 to kTable[k mod 32] gives the bits of
// 2^(k / 32) for the integers k the algorithm meets. Computed with 60-digit
// decimals; the same words as glibc's table.
alignas(64) constexpr uint64_t kTable[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
    0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
    0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
    0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
    0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
    0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull,
};
constexpr double kInvLn2Scaled = 0x1.71547652b82fep+5;  // 32 / ln 2
constexpr double kShift = 0x1.8p52;                     // rounds a double to an integer when added
// exp(r ln2 / 32) ~= 1 + kC2 r + kC1 r^2 + kC0 r^3 (glibc's coefficients).
constexpr double kC0 = 0x1.c6af84b912394p-20;
constexpr double kC1 = 0x1.ebfce50fac4f3p-13;
constexpr double kC2 = 0x1.62e42ff0c52d6p-6;
// The top 12 bits of |x| at and above which glibc leaves the fast path
// (|x| >= 88, infinities, NaN).
constexpr int kSpecialTop = 0x42b;

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn
// that it "may be used uninitialized" (a false positive in the header).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Eight exponentials of x - shift; false (nothing written) when one of the
// eight is a special case.
__attribute__((target("avx512f"))) inline bool EightExps(const float* x, __m256 shift, float* y) {
  const __m256 xf = _mm256_sub_ps(_mm256_loadu_ps(x), shift);  // float, as x[i] - shift
  const __m256i abstop = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xf), 20), _mm256_set1_epi32(0x7ff));
  if (!_mm256_testz_si256(_mm256_cmpgt_epi32(abstop, _mm256_set1_epi32(kSpecialTop - 1)), _mm256_set1_epi32(-1)))
    return false;
  const __m512d xd = _mm512_cvtps_pd(xf);
  const __m512d invln2 = _mm512_set1_pd(kInvLn2Scaled), shifter = _mm512_set1_pd(kShift);
  const __m512d kd_shifted = _mm512_fmadd_pd(invln2, xd, shifter);  // k + shift: k in the low bits
  const __m512i ki = _mm512_castpd_si512(kd_shifted);
  const __m512d kd = _mm512_sub_pd(kd_shifted, shifter);
  const __m512d r = _mm512_fmsub_pd(invln2, xd, kd);  // x * 32 / ln2 - k, one rounding
  // kTable[k mod 32] by two two-register permutes (index bits 0-3) and a
  // blend on bit 4: a gather of eight from memory is slower.
  const __m512i* table = reinterpret_cast<const __m512i*>(kTable);
  const __m512i low16 = _mm512_permutex2var_epi64(_mm512_load_si512(table), ki, _mm512_load_si512(table + 1));
  const __m512i high16 = _mm512_permutex2var_epi64(_mm512_load_si512(table + 2), ki, _mm512_load_si512(table + 3));
  const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
  const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(upper, low16, high16), _mm512_slli_epi64(ki, 47));
  const __m512d s = _mm512_castsi512_pd(t);  // 2^(k / 32)
  const __m512d z = _mm512_fmadd_pd(r, _mm512_set1_pd(kC0), _mm512_set1_pd(kC1));
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d p = _mm512_fmadd_pd(r, _mm512_set1_pd(kC2), _mm512_set1_pd(1.0));
  p = _mm512_fmadd_pd(z, r2, p);
  _mm256_storeu_ps(y, _mm512_cvtpd_ps(_mm512_mul_pd(p, s)));
  return true;
}

// Four exponentials as EightExps, in AVX2 registers.
__attribute__((target("avx2,fma"))) inline bool FourExps(const float* x, __m128 shift, float* y) {
  const __m128 xf = _mm_sub_ps(_mm_loadu_ps(x), shift);
  const __m128i abstop = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), _mm_set1_epi32(0x7ff));
  if (_mm_movemask_epi8(_mm_cmpgt_epi32(abstop, _mm_set1_epi32(kSpecialTop - 1))) != 0) return false;
  const __m256d xd = _mm256_cvtps_pd(xf);
  const __m256d invln2 = _mm256_set1_pd(kInvLn2Scaled), shifter = _mm256_set1_pd(kShift);
  const __m256d kd_shifted = _mm256_fmadd_pd(invln2, xd, shifter);
  const __m256i ki = _mm256_castpd_si256(kd_shifted);
  const __m256d kd = _mm256_sub_pd(kd_shifted, shifter);
  const __m256d r = _mm256_fmsub_pd(invln2, xd, kd);
  const __m256i index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  const __m256i t = _mm256_add_epi64(
      _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTable), index, 8), _mm256_slli_epi64(ki, 47));
  const __m256d s = _mm256_castsi256_pd(t);
  const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(kC0), _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d p = _mm256_fmadd_pd(r, _mm256_set1_pd(kC2), _mm256_set1_pd(1.0));
  p = _mm256_fmadd_pd(z, r2, p);
  _mm_storeu_ps(y, _mm256_cvtpd_ps(_mm256_mul_pd(p, s)));
  return true;
}

#pragma GCC diagnostic pop

// One shift for every element (ExpShifted) or a shift per element
// (ExpShiftedEach): the kernels below are written once for both.
struct OneShift {
  float value;
  float at(int64_t) const { return value; }
};
struct ShiftPerElement {
  const float* values;
  float at(int64_t i) const { return values[i]; }
};

__attribute__((target("avx"))) inline __m256 Shift8(OneShift s, int64_t) { return _mm256_set1_ps(s.value); }
__attribute__((target("avx"))) inline __m256 Shift8(ShiftPerElement s, int64_t i) {
  return _mm256_loadu_ps(s.values + i);
}
inline __m128 Shift4(OneShift s, int64_t) { return _mm_set1_ps(s.value); }
inline __m128 Shift4(ShiftPerElement s, int64_t i) { return _mm_loadu_ps(s.values + i); }

// std::exp itself for elements [begin, end): other CPUs, chunks with a
// special case, tails.
template <typename Shift>
void ScalarExps(const float* x, Shift shift, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) y[i] = std::exp(x[i] - shift.at(i));
}

template <typename Shift>
__attribute__((target("avx512f"))) void Avx512Exps(const float* x, Shift shift, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (!EightExps(x + i, Shift8(shift, i), y + i)) ScalarExps(x, shift, y, i, i + 8);
  }
  ScalarExps(x, shift, y, i, n);
}

template <typename Shift>
__attribute__((target("avx2,fma"))) void Avx2Exps(const float* x, Shift shift, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    if (!FourExps(x + i, Shift4(shift, i), y + i)) ScalarExps(x, shift, y, i, i + 4);
  }
  ScalarExps(x, shift, y, i, n);
}

void ExpShiftedScalar(const float* x, float shift, float* y, int64_t n) { ScalarExps(x, OneShift{shift}, y, 0, n); }
void ExpShiftedEachScalar(const float* x, const float* shift, float* y, int64_t n) {
  ScalarExps(x, ShiftPerElement{shift}, y, 0, n);
}

}  // namespace

namespace exp_shifted_internal {

void ExpShiftedAvx512(const float* x, float shift, float* y, int64_t n) { Avx512Exps(x, OneShift{shift}, y, n); }
void ExpShiftedAvx2(const float* x, float shift, float* y, int64_t n) { Avx2Exps(x, OneShift{shift}, y, n); }
void ExpShiftedEachAvx512(const float* x, const float* shift, float* y, int64_t n) {
  Avx512Exps(x, ShiftPerElement{shift}, y, n);
}
void ExpShiftedEachAvx2(const float* x, const float* shift, float* y, int64_t n) {
  Avx2Exps(x, ShiftPerElement{shift}, y, n);
}

}  // namespace exp_shifted_internal

void ExpShiftedEach(const float* x, const float* shift, float* y, int64_t n) {
  using Kernel = void (*)(const float*, const float*, float*, int64_t);
  static const Kernel kernel = CpuHasAvx512f()   ? exp_shifted_internal::ExpShiftedEachAvx512
                               : CpuHasAvx2Fma() ? exp_shifted_internal::ExpShiftedEachAvx2
                                                 : ExpShiftedEachScalar;
  kernel(x, shift, y, n);
}

void ExpShifted(const float* x, float shift, float* y, int64_t n) {
  using Kernel = void (*)(const float*, float, float*, int64_t);
  static const Kernel kernel = CpuHasAvx512f()   ? exp_shifted_internal::ExpShiftedAvx512
                               : CpuHasAvx2Fma() ? exp_shifted_internal::ExpShiftedAvx2
                                                                       : ExpShiftedScalar;
  kernel(x, shift, y, n);
}

}  // namespace onednn
}  // namespace tvlab
