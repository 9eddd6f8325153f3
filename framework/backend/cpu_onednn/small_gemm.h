#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SMALL_GEMM_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SMALL_GEMM_H_

// Batches of tiny products (attention's per-head q @ k^T and weights @ v at
// short sequences: the sort model's 256 products of 8 x 8 x 16) without
// oneDNN. oneDNN 2.6's f32 matmul ("gemm:jit" on AVX2) runs a batch as one
// sgemm call per product, about 0.45 us each however small the product; a
// plain loop per product, vectorised over the output row with its sums in
// registers, skips that cost: 3.8x faster on the sort model's 8 x 8 x 16,
// 1.2x on 32 x 32 x 16, slower from 32 x 32 x 32 on
// (bench/small_gemm_bench.cc measures both per shape; bench/README.md).
// On AVX-512 CPUs rows of 16 and more columns run in 16-lane registers.
//
// Each output is alpha * (sum over p in order 0..k-1 of A(i, p) * B(p, j))
// + beta * C (beta 0: C is not read), in float, with separate multiplies
// and adds (no FMA contraction), so every machine and every thread count
// computes the same bits. It is not oneDNN's order: a shape moved across
// the threshold changes results in the last bits, like any GEMM choice.

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

// The largest products the loop takes: each of m, n, k at most
// kSmallGemmMaxDim, m * n * k at most kSmallGemmMaxMacs (the loop was
// faster than oneDNN on every shape of bench/small_gemm_bench.cc up to
// here, on an AVX2 EPYC). Where oneDNN has its AVX-512 kernels
// (OnednnHasAvx512Core), those are faster from 16 rows or 64 columns on,
// even against the loop's AVX-512 version (an Intel Xeon, bench/README.md):
// there the loop takes at most kSmallGemmMaxRowsAvx512 rows and
// kSmallGemmMaxColsAvx512 columns.
constexpr int64_t kSmallGemmMaxDim = 64;
constexpr int64_t kSmallGemmMaxMacs = 32 * 32 * 16;
constexpr int64_t kSmallGemmMaxRowsAvx512 = 8;
constexpr int64_t kSmallGemmMaxColsAvx512 = 32;

// Whether `d` (after FlattenSharedB) is a batch of fp32 products small
// enough for SmallBatchedGemm: more than one product, each within the
// limits above (the AVX-512 ones when onednn_has_avx512_core).
bool IsSmallBatchedGemm(const GemmDesc& d, bool onednn_has_avx512_core);

// C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i] for the GemmDesc `d`
// (strides as in backend.h; stride 0 shares one matrix across the batch).
// Products are split over OpenMP threads when the batch is large.
void SmallBatchedGemm(const GemmDesc& d, const float* a, const float* b, float* c);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SMALL_GEMM_H_
