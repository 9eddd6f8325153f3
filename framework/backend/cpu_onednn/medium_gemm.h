#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_MEDIUM_GEMM_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_MEDIUM_GEMM_H_

// One fp32 product of the sizes small models' linear layers have (the sort
// model's forward Y = X W^T + b and dX = dY W, 512 x 64..128 x 64..128,
// and dW = dY^T X, 64..128 x 64..128 x 512), on AVX-512 CPUs, without
// oneDNN: each block of 4 rows x 64 columns of C (8 rows x 16 columns
// where n is at most 16; for dW, 8 rows x 32 columns over panels of 64
// terms, so a panel's rows of B stay in L1 across row blocks, or over the
// whole of k where that measured faster: MediumGemmDwPanelTerms) is AVX-512
// sums kept in registers, with op(A)'s values
// broadcast and B's rows read where they lie. A transposed B (the forward's
// weight, (n, k)) is first transposed into a (k, n) buffer the thread keeps,
// 16 x 16 at a time (under a microsecond at 64 x 64), on a cache line
// (cache_line_vector.h: in a plain std::vector, 16-byte aligned, three of
// every four of B's row loads spanned two lines, and the sort model's
// forward products took 27-29 us a call in the step against 23-24). In dW,
// each row block prefetches its share of the next panel of B: there B is an
// activation the forward wrote long before, and without it the first row
// block of every panel waited for L3.
//
// Why: inside the captured sort step oneDNN 2.6's matmul ran the backward's
// products at 90-140 GFLOP/s; with this loop the step's Gemm calls went from
// 1,331-1,367 to 1,248-1,312 us a step on an Intel Xeon (bench/README.md).
// The forward's products followed later (a scalar transpose first made
// them slower; with the 16 x 16 transpose their time in the step against
// dX's fell from 1.60 to 1.48-1.56 on that Xeon, bench/README.md), as did
// the panel prefetch (dW's against dX's 1.71 -> 1.43-1.53).
//
// Each output is sum over p in order 0..k-1 of op(A)(i, p) * B(p, j), one
// fused multiply-add per term from 0, then + bias(j) when there is one, or
// + C(i, j) with beta 1 (the sum and the old value in one IEEE addition,
// as a separate Binary add of the two would give: autograd adds a dX into
// a gradient that way). On that Xeon, oneDNN's matmul computed the same
// bits for every shape this takes, forward included (the sort run's loss was
// the same to the bit either way), so taking these shapes moved no result
// there. Threads split C's row blocks, so every thread count computes the
// same bits.

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

// The largest products the loop takes: k at most kMediumGemmMaxK, n at most
// kMediumGemmMaxN, m * n * k at most kMediumGemmMaxMacs (the sort model's
// largest, 128 x 64 x 512; larger shapes are oneDNN's). With A not
// transposed n need not be a multiple of 16: the last columns go through
// masked loads and stores (the sort model's head forward, n 10: 14.7-16.8
// us a step with oneDNN, 13.6-14.4 here on an Intel Xeon, bench/README.md;
// oneDNN's bits there were this loop's order). dW's n stays a multiple of
// 16 (a masked load in its loop made GCC keep the sums on the stack).
constexpr int64_t kMediumGemmMaxK = 512;
constexpr int64_t kMediumGemmMaxN = 256;
constexpr int64_t kMediumGemmMaxMacs = 128 * 128 * 512;

// Whether `d` (after FlattenSharedB) is one fp32 product MediumGemm takes:
// batch 1, not both operands transposed, alpha 1, beta 0 (or 1 with A not
// transposed: one panel of terms, so C still holds its old value at the
// end; B transposed only with beta 0), within the limits above, on a
// CPU where oneDNN has its AVX-512 kernels (`onednn_has_avx512_core`).
bool IsMediumGemm(const GemmDesc& d, bool onednn_has_avx512_core);

// c (m, n) = op(a) @ op(b) (+ bias (n) on every row, when not null; + c
// with beta 1) for a `d` IsMediumGemm takes.
void MediumGemm(const GemmDesc& d, const float* a, const float* b, const float* bias, float* c);

// MediumGemm for a `d` with A transposed (a stored (k, m)), B not, and beta 0, and
// a_column_sums (m) = a's k rows summed, each column from 0 row by row in
// float (cpu_onednn's ReduceSumTo order: the same bits), as the product
// reads them: a Linear's bias gradient beside its weight gradient.
void MediumGemmAndColumnSums(const GemmDesc& d, const float* a, const float* b, float* c, float* a_column_sums);

// The terms of a panel of dW (A transposed) this machine runs for k terms:
// 64, or all k where the whole of k measured faster, once in the process
// (a 64 x 64 x 512 product timed both ways). Panels of 64 took the sort
// model's dW from 98-106 to 136-143 GFLOP/s on the Xeon of bench/README.md;
// on an AMD EPYC Zen 4 one panel ran about 10% faster than panels of 64.
// Panels change no bit, so the choice moves only the time.
int64_t MediumGemmDwPanelTerms(int64_t k);

// MediumGemmAndColumnSums in panels of `panel_terms` (>= 1) instead: the
// same bits at every panel size (medium_gemm_test).
void MediumGemmAndColumnSumsInPanels(const GemmDesc& d, const float* a, const float* b, float* c,
                                     float* a_column_sums, int64_t panel_terms);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_MEDIUM_GEMM_H_
