// ReferenceBackend's data movement: Permute, Copy2D, Gather and ScatterAdd.

#include <algorithm>
#include <vector>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                               float* y) {
  const size_t rank = shape.size();
  Shape in_strides = ContiguousStrides(shape);
  Shape out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[i] = shape[perm[i]];
  Shape index(rank, 0);
  const int64_t n = NumElements(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += index[d] * in_strides[perm[d]];
    y[flat] = x[src];
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

void ReferenceBackend::Copy2D(const float* src, int64_t src_stride, float* dst,
                              int64_t dst_stride, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * src_stride, src + r * src_stride + cols, dst + r * dst_stride);
}

void ReferenceBackend::Gather(const float* table, int64_t cols, const int32_t* ids, int64_t n,
                              float* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c) out[i * cols + c] = table[ids[i] * cols + c];
}

void ReferenceBackend::ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids,
                                  int64_t n, float* d_table) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c) d_table[ids[i] * cols + c] += d_out[i * cols + c];
}

}  // namespace tvlab
