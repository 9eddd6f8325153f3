#include "experiments/hf/hf_tensors.h"

#include <algorithm>
#include <utility>

namespace tvlab {

Tensor Copy(const Tensor& t) { return Tensor::FromVector(t.shape(), t.ToVector()); }

Tensor Scaled(const Tensor& t, float factor) {
  std::vector<float> v = t.ToVector();
  for (float& x : v) x *= factor;
  return Tensor::FromVector(t.shape(), std::move(v));
}

Tensor Transposed(const Tensor& t) {
  const int64_t r = t.shape()[0], c = t.shape()[1];
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[j * r + i] = in[i * c + j];
  return Tensor::FromVector({c, r}, std::move(out));
}

Tensor ConcatLast(const std::vector<Tensor>& parts) {
  const int64_t rows = parts[0].rank() == 1 ? 1 : parts[0].shape()[0];
  int64_t cols = 0;
  std::vector<std::vector<float>> values;
  for (const Tensor& p : parts) {
    cols += p.shape().back();
    values.push_back(p.ToVector());
  }
  std::vector<float> out;
  out.reserve(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < parts.size(); ++k) {
      const int64_t w = parts[k].shape().back();
      out.insert(out.end(), values[k].begin() + r * w, values[k].begin() + (r + 1) * w);
    }
  if (parts[0].rank() == 1) return Tensor::FromVector({cols}, std::move(out));
  return Tensor::FromVector({rows, cols}, std::move(out));
}

Tensor Columns(const Tensor& t, int64_t first, int64_t count) {
  const bool vector = t.rank() == 1;
  const int64_t rows = vector ? 1 : t.shape()[0], cols = t.shape().back();
  std::vector<float> in = t.ToVector(), out;
  for (int64_t r = 0; r < rows; ++r)
    out.insert(out.end(), in.begin() + r * cols + first, in.begin() + r * cols + first + count);
  return vector ? Tensor::FromVector({count}, std::move(out)) : Tensor::FromVector({rows, count}, std::move(out));
}

Tensor InterleavedToHalves(const Tensor& t, int64_t head_dim) {
  const int64_t rows = t.shape()[0], width = t.numel() / rows, half = head_dim / 2;
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t head = row / head_dim, j = row % head_dim;
    const int64_t from = head * head_dim + (j < half ? 2 * j : 2 * (j - half) + 1);
    std::copy(in.begin() + from * width, in.begin() + (from + 1) * width, out.begin() + row * width);
  }
  return Tensor::FromVector(t.shape(), std::move(out));
}

Tensor HalvesToInterleaved(const Tensor& t, int64_t head_dim) {
  const int64_t rows = t.shape()[0], width = t.numel() / rows, half = head_dim / 2;
  std::vector<float> in = t.ToVector(), out(in.size());
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t head = row / head_dim, k = row % head_dim;
    const int64_t from = head * head_dim + (k % 2 == 0 ? k / 2 : half + k / 2);
    std::copy(in.begin() + from * width, in.begin() + (from + 1) * width, out.begin() + row * width);
  }
  return Tensor::FromVector(t.shape(), std::move(out));
}

}  // namespace tvlab
