#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSED_GEMM_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSED_GEMM_H_

// Products with A transposed that oneDNN 2.6 runs at half speed on CPUs
// without AVX-512: a weight gradient dW = dY^T X (A = dY stored (tokens, m))
// with m >= 1024 output rows and 128..256 columns, e.g. the GPT bench's
// d_ff 1024 x d 256 up-projection, runs "gemm:jit" at about 36 GFLOP/s on
// one thread of an AVX2 EPYC and 62 at two, against 50-68 and 93-114 when
// A is first transposed into rows (a oneDNN reorder, an exact copy) and the
// rows are multiplied (bench/transposed_gemm_bench.cc; bench/README.md).
// Narrower (64) or wider (>= 384) products, m <= 768, and every product on
// an AVX-512 CPU (not measured) keep the transposed operand as it is.
//
// The transposed-first product is oneDNN's product of the copied rows, so
// its sums are in that kernel's order, not the transposed kernel's: a run
// on an AVX2 CPU moves in the last bits where these products occur, like
// any change of GEMM kernel (docs/architecture.md).

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

constexpr int64_t kTransposeFirstMinRows = 1024;
constexpr int64_t kTransposeFirstMinCols = 128;
constexpr int64_t kTransposeFirstMaxCols = 256;

// Whether cpu_onednn copies A into rows before multiplying: `d` is one fp32
// product with A transposed and m, n within the limits above, on a CPU
// whose instruction sets (as oneDNN uses them) lack AVX512_CORE.
bool TransposesAFirst(const GemmDesc& d, bool cpu_has_avx512_core);

// Whether oneDNN's effective instruction sets (the CPU's, or fewer under
// DNNL_MAX_CPU_ISA) include AVX512_CORE; needs no engine.
bool OnednnHasAvx512Core();

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TRANSPOSED_GEMM_H_
