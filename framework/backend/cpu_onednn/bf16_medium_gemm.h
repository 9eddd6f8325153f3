#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_BF16_MEDIUM_GEMM_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_BF16_MEDIUM_GEMM_H_

// medium_gemm.h's products (small models' Linear layers: the sort model's
// forward Y = X W^T + b, dX = dY W and dW = dY^T X) in runtime.precision
// bf16, on CPUs with AVX512_BF16 (AMD Zen 4 and later, Intel Cooper Lake and
// later), without oneDNN. Each 32-bit lane of a `vdpbf16ps` multiplies two
// pairs of bf16 values and adds both products to an fp32 sum: twice the
// multiply-adds an fp32 FMA does a cycle (223 against 113 GFLOP/s on one
// core of an AMD EPYC Zen 4, bench/README.md).
//
// Operands are packed first, as words of two bf16 values adjacent in the
// sum (k): op(A)'s rows as (m, k/2) words (a row-major A's rows as they lie;
// dW's A, dY stored (k, m), as pairs of its rows), B as (k/2, n) words
// (pairs of B's rows; the forward's W, stored (n, k), as pairs of its
// columns, through a 16 x 16 transpose). Then blocks of C are sums kept in
// registers, as medium_gemm.cc's: 4 rows x 64 columns (8 x 16 where n is at
// most 16; dW: 8 x 32), op(A)'s words broadcast, B's words read where they
// lie, k/2 `vdpbf16ps` a block.
//
// Why: oneDNN 2.6's bf16 matmul ran the sort model's products at about 100
// GFLOP/s on that Zen 4 (rounding both operands into buffers in a scalar
// loop first, every call), no faster than fp32, so `runtime.precision: bf16`
// made the sort run slower (3.11 s against 2.55).
//
// Arithmetic (precision.h's bf16, up to summation order): each operand
// rounded to nearest bf16, ties to even (`vcvtne2ps2bf16`); each product of
// two bf16 values is exact in fp32 and added to the sum in fp32, term
// p + 1 then term p of each pair, pairs in order of p; then + bias or + C
// as medium_gemm.h. As oneDNN's bf16 kernels on such CPUs, the
// instructions treat subnormal operands and sums as zero (DAZ and FTZ); a
// subnormal's product is below 2^-126 times the other operand. A
// Linear's bias gradient (the column sums) is summed in fp32 from the
// unrounded values, row by row: cpu_onednn's ReduceSumTo bits, as in fp32.
// Threads split C's row blocks after the packing: every thread count gives
// the same bits.

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

// Whether this CPU runs bf16 dot products natively: AVX512_BF16 among the
// instruction sets oneDNN uses (the CPU's, or fewer under
// ONEDNN_MAX_CPU_ISA).
bool CpuRunsBf16DotProducts();

// Whether `d` (after FlattenSharedB) is a bf16 product Bf16MediumGemm takes:
// the shapes IsMediumGemm takes in fp32, precision bf16, on a CPU that runs
// bf16 dot products.
bool IsBf16MediumGemm(const GemmDesc& d);

// c (m, n) = op(a) @ op(b) in bf16 (+ bias (n) on every row when not null;
// + c with beta 1) for a `d` IsBf16MediumGemm takes.
void Bf16MediumGemm(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c);

// Bf16MediumGemm for A transposed (a stored (k, m)), B not, beta 0, and
// a_column_sums (m) = a's k rows summed in fp32, row by row from 0.
void Bf16MediumGemmAndColumnSums(const GemmDesc& d, const float* a, const float* b, float* c, float* a_column_sums);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_BF16_MEDIUM_GEMM_H_
