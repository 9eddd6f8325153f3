#ifndef TVLAB_EXPERIMENTS_HF_HF_TENSORS_H_
#define TVLAB_EXPERIMENTS_HF_HF_TENSORS_H_

// The layout changes between tvlab's and Hugging Face's tensors
// (hf_architecture.h's HfLayout), each with its inverse, on host float
// tensors. Every result is a new tensor.

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace tvlab {

Tensor Copy(const Tensor& t);
// Every element times `factor` (in float).
Tensor Scaled(const Tensor& t, float factor);
// (r, c) -> (c, r).
Tensor Transposed(const Tensor& t);
// Tensors of equal leading shape, (R, c_i) or (c_i), side by side: (R, sum c_i).
Tensor ConcatLast(const std::vector<Tensor>& parts);
// Columns [first, first + count) of a (rows, cols) tensor, or elements of a vector.
Tensor Columns(const Tensor& t, int64_t first, int64_t count);
// Rows (dimension 0) of a q or k projection (heads * hs, ...) reordered per
// head from INTERLEAVED pairs (x[2i], x[2i+1]) to rotate_half's
// (x[i], x[i + hs/2]): new row j of a head is old row 2j (j < hs/2) or
// 2(j - hs/2) + 1.
Tensor InterleavedToHalves(const Tensor& t, int64_t head_dim);
// The inverse: rotate_half rows back to INTERLEAVED pairs.
Tensor HalvesToInterleaved(const Tensor& t, int64_t head_dim);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_HF_HF_TENSORS_H_
