#ifndef TVLAB_FRAMEWORK_TENSOR_TENSOR_H_
#define TVLAB_FRAMEWORK_TENSOR_TENSOR_H_

// A dense n-d array. Layout legend used in shape comments across tvlab:
//   B batch, T query/target length, S key/source length, C model width
//   (d_model), H query heads, G key/value heads, hs head size, F FFN width,
//   V vocabulary. Row-major: the last dimension is contiguous.
//
// Tensors share storage on copy (like torch.Tensor); Clone() copies data.
// dtype is float32 for now; device is where the storage lives.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace tvlab {

using Shape = std::vector<int64_t>;

enum class DType { kFloat32 };
enum class Device { kCpu, kCuda };

int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);
// Row-major strides for `shape`.
Shape ContiguousStrides(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;  // An empty tensor: defined() is false.

  static Tensor Zeros(const Shape& shape);
  // Uninitialised storage, for outputs a kernel overwrites entirely.
  static Tensor Empty(const Shape& shape);
  static Tensor Full(const Shape& shape, float value);
  static Tensor FromVector(const Shape& shape, std::vector<float> values);
  static Tensor Scalar(float value) { return Full({}, value); }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  // Size of dimension `d`; negative d counts from the end.
  int64_t dim(int64_t d) const;
  int64_t numel() const { return NumElements(shape_); }
  DType dtype() const { return DType::kFloat32; }
  Device device() const { return Device::kCpu; }
  bool is_contiguous() const { return strides_ == ContiguousStrides(shape_); }

  float* data() { return storage_.get() + offset_; }
  const float* data() const { return storage_.get() + offset_; }
  float item() const;  // The value of a one-element tensor.
  std::vector<float> ToVector() const;

  // A view with a new shape over the same storage (numel must match; one
  // dimension may be -1).
  Tensor Reshape(Shape shape) const;
  Tensor Clone() const;
  // Sets every element to `value`.
  void Fill(float value);

 private:
  std::shared_ptr<float[]> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  Shape strides_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TENSOR_TENSOR_H_
