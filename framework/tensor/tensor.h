#ifndef TVLAB_FRAMEWORK_TENSOR_TENSOR_H_
#define TVLAB_FRAMEWORK_TENSOR_TENSOR_H_

// A dense n-d array. Layout legend used in shape comments across tvlab:
//   B batch, T query/target length, S key/source length, C model width
//   (d_model), H query heads, G key/value heads, hs head size, F FFN width,
//   V vocabulary. Row-major: the last dimension is contiguous.
//
// Tensors share storage on copy (like torch.Tensor); Clone() copies data.
// dtype is float32 for now; device() is where the storage lives
// (device_memory.h). New tensors are created on CurrentDevice(), the active
// backend's. Host code reads values only of host tensors (data()); every
// other move between host and device is one of the explicit copies below.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "framework/tensor/device_memory.h"

namespace tvlab {

using Shape = std::vector<int64_t>;

enum class DType { kFloat32 };

int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);
// Row-major strides for `shape`.
Shape ContiguousStrides(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;  // An empty tensor: defined() is false.

  // Factories create the tensor on `device`, by default CurrentDevice().
  static Tensor Zeros(const Shape& shape) { return Zeros(shape, CurrentDevice()); }
  static Tensor Zeros(const Shape& shape, Device device) { return Full(shape, 0.0f, device); }
  // Uninitialised storage, for outputs a kernel overwrites entirely.
  static Tensor Empty(const Shape& shape) { return Empty(shape, CurrentDevice()); }
  static Tensor Empty(const Shape& shape, Device device);
  static Tensor Full(const Shape& shape, float value) {
    return Full(shape, value, CurrentDevice());
  }
  static Tensor Full(const Shape& shape, float value, Device device);
  // Host values copied onto the device (an explicit host-to-device copy).
  static Tensor FromVector(const Shape& shape, const std::vector<float>& values) {
    return FromVector(shape, values, CurrentDevice());
  }
  static Tensor FromVector(const Shape& shape, const std::vector<float>& values, Device device);
  static Tensor Scalar(float value) { return Full({}, value); }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  // Size of dimension `d`; negative d counts from the end.
  int64_t dim(int64_t d) const;
  int64_t numel() const { return NumElements(shape_); }
  DType dtype() const { return DType::kFloat32; }
  Device device() const;
  bool is_contiguous() const { return strides_ == ContiguousStrides(shape_); }

  // Host access: stops the process if the tensor is not on the host. Only
  // the edges listed in docs/architecture.md may call it outside backends.
  float* data();
  const float* data() const;
  // The storage pointer for a kernel or copy of this tensor's device. Opaque
  // (not dereferenceable by host code) unless device() is kCpu.
  float* ptr() const { return static_cast<float*>(storage_->ptr()) + offset_; }

  // Explicit device-to-host copies (the edges: losses, metrics, decoding).
  float item() const;  // The value of a one-element tensor.
  std::vector<float> ToVector() const;
  // A copy on `device` (the same storage when already there).
  Tensor To(Device device) const;
  Tensor ToHost() const { return To(Device::kCpu); }

  // A view with a new shape over the same storage (numel must match; one
  // dimension may be -1).
  Tensor Reshape(Shape shape) const;
  Tensor Clone() const;
  // Sets every element to `value` (on the tensor's device).
  void Fill(float value);

 private:
  std::shared_ptr<Buffer> storage_;
  int64_t offset_ = 0;
  Shape shape_;
  Shape strides_;
};

// int32 ids (token ids, targets, row indices) on a device, for the kernels
// that take them (Gather, ScatterAdd, CrossEntropy, ArgMaxRows).
class DeviceInts {
 public:
  DeviceInts() = default;
  // An explicit host-to-device copy (loading a batch).
  static DeviceInts Upload(const std::vector<int32_t>& values, Device device = CurrentDevice());
  static DeviceInts Empty(int64_t n, Device device = CurrentDevice());
  int64_t size() const { return n_; }
  // Opaque unless on the host, as Tensor::ptr().
  int32_t* ptr() const { return storage_ ? static_cast<int32_t*>(storage_->ptr()) : nullptr; }
  Device device() const { return storage_ ? storage_->device() : CurrentDevice(); }
  // An explicit device-to-host copy.
  std::vector<int32_t> ToVector() const;

 private:
  std::shared_ptr<Buffer> storage_;
  int64_t n_ = 0;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TENSOR_TENSOR_H_
