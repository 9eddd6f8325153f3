#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_COLUMN_PARTS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_COLUMN_PARTS_H_

// Wide fp32 products that cpu_onednn runs as several oneDNN matmuls of 512
// columns of C each (B's matching columns, or rows of a transposed B, and
// C's rows at their full stride) instead of one.
//
// Why: oneDNN 2.6's matmul on AVX-512 ran a product whose B is wider than
// about 512 KiB (k x n floats) 8-17% slower than the same product cut into
// 512-column parts, each with its slice of B staying in L2 (one thread,
// the parts called one after another, every call of the two versions
// interleaved in one process, best of 38; Intel Xeon, bench/README.md):
// the GPT config's FFN up-projection (4096 x 1024 x 256, B transposed)
// 141-148 -> 153-162 GFLOP/s, and its down-projection's input gradient
// (4096 x 1024 x 256, B as is) 142-152 -> 165-171; 4096 x 2048 x 128
// 135-138 -> 156-160 in four parts. At 1,024 rows the gain was 1-10%
// (fewer rows were not measured: one call stays); where B fits, one call
// stays too (4096 x 512 x 256 gained 1-5% in parts, 2048 x 512 x 128
// lost 1-14%); at k = 512 the parts gained 0-5%.
//
// The same bits: with k at most 256 oneDNN sums each output over all of k
// in one block whatever n is, so every part computes the bits the whole
// product computes (column_parts_test.cc checks it against one oneDNN
// matmul of the whole); at k = 512 it did not (another blocking of k for
// the narrower primitive), so longer products are not cut.

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

constexpr int64_t kColumnPartWidth = 512;
constexpr int64_t kColumnPartsMaxK = 256;
constexpr int64_t kColumnPartsMinRows = 1024;
constexpr int64_t kColumnPartsMinBFloats = 128 * 1024;  // 512 KiB of B

// How many parts of kColumnPartWidth columns cpu_onednn cuts `d` (after
// FlattenSharedB) into: n / kColumnPartWidth for one fp32 product with A
// as is, alpha 1 and beta 0, k at most kColumnPartsMaxK, at least
// kColumnPartsMinRows rows, n a multiple of kColumnPartWidth and B above
// kColumnPartsMinBFloats, on a CPU where oneDNN has its AVX-512 kernels
// (`onednn_has_avx512_core`; not measured elsewhere); otherwise 1.
int64_t GemmColumnParts(const GemmDesc& d, bool onednn_has_avx512_core);

// Part `part` of `d` as a product of its own: kColumnPartWidth columns.
// Its B and C start at the offsets ColumnPartOffsets gives, with B's rows
// (B as is) and C's rows d.n apart.
GemmDesc ColumnPart(const GemmDesc& d);
struct ColumnPartOffsets {
  int64_t b = 0, c = 0, bias = 0;  // floats from the whole product's B, C, bias
};
ColumnPartOffsets ColumnPartAt(const GemmDesc& d, int64_t part);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_COLUMN_PARTS_H_
