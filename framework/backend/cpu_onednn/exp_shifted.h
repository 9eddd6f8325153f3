#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_EXP_SHIFTED_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_EXP_SHIFTED_H_

// y[i] = std::exp(x[i] - shift), eight at a time on CPUs with AVX-512F,
// four at a time on CPUs with AVX2 and FMA, and to the bit what std::exp
// returns. Softmax's rows (onednn_rows.cc) spent
// most of their time in scalar calls to expf (the sort model's 8-key
// attention rows: 2 ns an element).
//
// How it can be the same bits: glibc (2.28 on; Debian 12 ships 2.36) picks
// __expf_fma on any CPU with FMA and AVX2 (every AVX-512F CPU has both).
// That routine (Arm's optimized-routines algorithm) works in double: x / ln2
// scaled by 32 is split into an integer k and a remainder r with one FMA, a
// table gives 2^((k mod 32) / 32), a cubic in r the rest, and one rounding
// to float ends it. ExpShifted runs those double operations, the same FMAs
// in the same order, eight lanes wide, with the same table and
// coefficients; inputs with |x| >= 88 or NaN (glibc's special cases:
// overflow, underflow, -inf, NaN) go to std::exp itself, and so does
// everything on other CPUs. exp_shifted_test compares each kernel the CPU
// can run with std::exp bit for bit over a sweep of every float exponent, so
// a libm that computes otherwise fails there.

#include <cstdint>

namespace tvlab {
namespace onednn {

void ExpShifted(const float* x, float shift, float* y, int64_t n);
// y[i] = std::exp(x[i] - shift[i]): a shift per element, the same bits
// (short softmax rows, eight rows at a time in the lanes: onednn_rows.cc).
void ExpShiftedEach(const float* x, const float* shift, float* y, int64_t n);

// ExpShifted's vector kernels, for exp_shifted_test (ExpShifted takes the
// AVX-512 one where CpuHasAvx512f(), else the AVX2 one where CpuHasAvx2Fma()
// (framework/core/cpu_features.h), else std::exp element by element).
namespace exp_shifted_internal {
void ExpShiftedAvx512(const float* x, float shift, float* y, int64_t n);
void ExpShiftedAvx2(const float* x, float shift, float* y, int64_t n);
void ExpShiftedEachAvx512(const float* x, const float* shift, float* y, int64_t n);
void ExpShiftedEachAvx2(const float* x, const float* shift, float* y, int64_t n);
}  // namespace exp_shifted_internal

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_EXP_SHIFTED_H_
