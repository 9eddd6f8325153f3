// Which wide products cpu_onednn cuts into column parts (column_parts.h).

#include "framework/backend/cpu_onednn/column_parts.h"

namespace tvlab {
namespace onednn {

int64_t GemmColumnParts(const GemmDesc& d, bool onednn_has_avx512_core) {
  const bool plain = d.precision == Precision::kFp32 && d.batch == 1 && !d.trans_a && d.alpha == 1.0f &&
                     d.beta == 0.0f;
  const bool wide = d.n % kColumnPartWidth == 0 && d.n > kColumnPartWidth && d.k * d.n > kColumnPartsMinBFloats;
  const bool cut = onednn_has_avx512_core && plain && wide && d.k <= kColumnPartsMaxK && d.m >= kColumnPartsMinRows;
  return cut ? d.n / kColumnPartWidth : 1;
}

GemmDesc ColumnPart(const GemmDesc& d) {
  GemmDesc part = d;
  part.n = kColumnPartWidth;
  return part;
}

ColumnPartOffsets ColumnPartAt(const GemmDesc& d, int64_t part) {
  const int64_t j0 = part * kColumnPartWidth;
  // B (k, n) as is: columns j0..; transposed, W (n, k): rows j0..
  return {d.trans_b ? j0 * d.k : j0, j0, j0};
}

}  // namespace onednn
}  // namespace tvlab
