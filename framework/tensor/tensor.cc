#include "framework/tensor/tensor.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "framework/core/check.h"

namespace tvlab {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  return "(" + absl::StrJoin(shape, ", ") + ")";
}

Shape ContiguousStrides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Tensor Tensor::Zeros(const Shape& shape) { return Full(shape, 0.0f); }

Tensor Tensor::Empty(const Shape& shape) {
  for (int64_t d : shape) TVLAB_CHECK(d >= 0) << "negative dimension in " << ShapeToString(shape);
  Tensor t;
  // new float[n] leaves the values uninitialised (no zero-fill pass).
  t.storage_ = std::shared_ptr<float[]>(new float[std::max<int64_t>(NumElements(shape), 1)]);
  t.shape_ = shape;
  t.strides_ = ContiguousStrides(shape);
  return t;
}

Tensor Tensor::Full(const Shape& shape, float value) {
  Tensor t = Empty(shape);
  t.Fill(value);
  return t;
}

Tensor Tensor::FromVector(const Shape& shape, std::vector<float> values) {
  TVLAB_CHECK_EQ(NumElements(shape), static_cast<int64_t>(values.size()));
  Tensor t = Empty(shape);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

int64_t Tensor::dim(int64_t d) const {
  if (d < 0) d += rank();
  TVLAB_CHECK(d >= 0 && d < rank()) << "dim " << d << " of " << ShapeToString(shape_);
  return shape_[d];
}

float Tensor::item() const {
  TVLAB_CHECK_EQ(numel(), 1);
  return data()[0];
}

std::vector<float> Tensor::ToVector() const {
  TVLAB_CHECK(is_contiguous());
  return std::vector<float>(data(), data() + numel());
}

Tensor Tensor::Reshape(Shape shape) const {
  TVLAB_CHECK(is_contiguous()) << "Reshape of a strided view";
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TVLAB_CHECK(infer < 0) << "two -1 dimensions";
      infer = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) shape[infer] = known == 0 ? 0 : numel() / known;
  TVLAB_CHECK_EQ(NumElements(shape), numel()) << ShapeToString(shape_) << " -> " << ShapeToString(shape);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = ContiguousStrides(t.shape_);
  return t;
}

Tensor Tensor::Clone() const {
  TVLAB_CHECK(is_contiguous());
  Tensor t = Empty(shape_);
  std::copy(data(), data() + numel(), t.data());
  return t;
}

void Tensor::Fill(float value) { std::fill(data(), data() + numel(), value); }

}  // namespace tvlab
