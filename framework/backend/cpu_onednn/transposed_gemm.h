#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSED_GEMM_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSED_GEMM_H_

// Products with A transposed that oneDNN 2.6 runs at half speed on CPUs
// without AVX-512, and two routes around its transposed kernel. Measured
// with 64-byte aligned operands, as tvlab's host allocator makes them (the
// kernel's speed depends on it: 256 x 1024 x 4096 ran at 32-35 GFLOP/s on
// one thread aligned, 52 at malloc's 16-byte offset), by
// bench/transposed_gemm_bench.cc on an AVX2 EPYC (bench/README.md):
// - A weight gradient dW = dY^T X (A = dY stored (tokens, m)) with m >= 1024
//   rows and 128..256 columns (the GPT bench's d_ff 1024 x d 256
//   up-projection) runs at about 35 GFLOP/s a thread; A copied into rows
//   (a oneDNN reorder, an exact copy) and multiplied as rows runs 46-66 on
//   one thread and 67-104 on two (TransposesAFirst).
// - The mirror case, 128..256 rows and >= 1024 columns (the GPT bench's
//   d 256 x d_ff 1024 down-projection), runs at 30-40 GFLOP/s on one thread
//   and 72-74 on two; computed as its transpose C^T = B^T A (a product of
//   the first kind) and copied back, 32-63 and 87-109 (SwapsOperands).
// Narrower (64) or wider (>= 384) products, 768 rows, and every product on
// an AVX-512 CPU (not measured) keep the transposed kernel.
//
// The routes' products are oneDNN's products of the copied operands, so
// their sums are in another kernel's order than the transposed one's: a
// run on an AVX2 CPU moves in the last bits where these products occur,
// like any change of GEMM kernel (docs/architecture.md).

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

constexpr int64_t kTransposeFirstMinRows = 1024;
constexpr int64_t kTransposeFirstMinCols = 128;
constexpr int64_t kTransposeFirstMaxCols = 256;

// Whether cpu_onednn copies A into rows before multiplying: `d` is one fp32
// product with A transposed, k > 0 and m, n within the limits above, on a CPU
// whose instruction sets (as oneDNN uses them) lack AVX512_CORE.
bool TransposesAFirst(const GemmDesc& d, bool cpu_has_avx512_core);

// Whether cpu_onednn computes `d` as its swapped product and copies it
// back: one product with A transposed, B not, beta 0 (the copy back does
// not add to C), at most kSwapMaxRows rows, whose swapped product
// TransposesAFirst takes.
constexpr int64_t kSwapMaxRows = 256;
bool SwapsOperands(const GemmDesc& d, bool cpu_has_avx512_core);

// d's swapped product: (n, m) = op(B)^T A for one product with A transposed
// and B not (alpha and precision kept).
GemmDesc SwappedProduct(const GemmDesc& d);

// Whether oneDNN's effective instruction sets (the CPU's, or fewer under
// DNNL_MAX_CPU_ISA) include AVX512_CORE; needs no engine.
bool OnednnHasAvx512Core();

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSED_GEMM_H_
