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

Tensor Tensor::Empty(const Shape& shape, Device device) {
  for (int64_t d : shape) TVLAB_CHECK(d >= 0) << "negative dimension in " << ShapeToString(shape);
  Tensor t;
  // From the device's caching allocator; the values are left as they are.
  t.storage_ = std::make_shared<Buffer>(
      device, sizeof(float) * static_cast<size_t>(std::max<int64_t>(NumElements(shape), 1)));
  t.shape_ = shape;
  t.strides_ = ContiguousStrides(shape);
  return t;
}

Tensor Tensor::Full(const Shape& shape, float value, Device device) {
  Tensor t = Empty(shape, device);
  t.Fill(value);
  return t;
}

Tensor Tensor::FromVector(const Shape& shape, const std::vector<float>& values, Device device) {
  TVLAB_CHECK_EQ(NumElements(shape), static_cast<int64_t>(values.size()));
  Tensor t = Empty(shape, device);
  AllocatorFor(device).memory().CopyFromHost(values.data(), t.ptr(),
                                             values.size() * sizeof(float));
  return t;
}

Device Tensor::device() const {
  TVLAB_CHECK(defined()) << "device() of an undefined tensor";
  return storage_->device();
}

float* Tensor::data() {
  TVLAB_CHECK(device() == Device::kCpu)
      << "host access to a tensor of shape " << ShapeToString(shape_) << " on "
      << DeviceName(device()) << ": device data is read through a backend kernel or an explicit "
      << "copy (ToHost, ToVector, item)";
  return ptr();
}

const float* Tensor::data() const { return const_cast<Tensor*>(this)->data(); }

int64_t Tensor::dim(int64_t d) const {
  if (d < 0) d += rank();
  TVLAB_CHECK(d >= 0 && d < rank()) << "dim " << d << " of " << ShapeToString(shape_);
  return shape_[d];
}

float Tensor::item() const {
  TVLAB_CHECK_EQ(numel(), 1);
  float value;
  AllocatorFor(device()).memory().CopyToHost(ptr(), &value, sizeof(float));
  return value;
}

std::vector<float> Tensor::ToVector() const {
  TVLAB_CHECK(is_contiguous());
  std::vector<float> out(numel());
  AllocatorFor(device()).memory().CopyToHost(ptr(), out.data(), out.size() * sizeof(float));
  return out;
}

Tensor Tensor::To(Device target) const {
  if (device() == target) return *this;
  TVLAB_CHECK(is_contiguous());
  Tensor t = Empty(shape_, target);
  const size_t bytes = static_cast<size_t>(numel()) * sizeof(float);
  if (target == Device::kCpu) {
    AllocatorFor(device()).memory().CopyToHost(ptr(), t.ptr(), bytes);
  } else if (device() == Device::kCpu) {
    AllocatorFor(target).memory().CopyFromHost(ptr(), t.ptr(), bytes);
  } else {  // device to device, through the host
    std::vector<float> host = ToVector();
    AllocatorFor(target).memory().CopyFromHost(host.data(), t.ptr(), bytes);
  }
  return t;
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
  Tensor t = Empty(shape_, device());
  AllocatorFor(device()).memory().CopyOnDevice(ptr(), t.ptr(),
                                               static_cast<size_t>(numel()) * sizeof(float));
  return t;
}

void Tensor::Fill(float value) { AllocatorFor(device()).memory().Fill(ptr(), numel(), value); }

DeviceInts DeviceInts::Empty(int64_t n, Device device) {
  TVLAB_CHECK(n >= 0);
  DeviceInts out;
  out.n_ = n;
  out.storage_ = std::make_shared<Buffer>(
      device, sizeof(int32_t) * static_cast<size_t>(std::max<int64_t>(n, 1)));
  return out;
}

DeviceInts DeviceInts::Upload(const std::vector<int32_t>& values, Device device) {
  DeviceInts out = Empty(static_cast<int64_t>(values.size()), device);
  AllocatorFor(device).memory().CopyFromHost(values.data(), out.ptr(),
                                             values.size() * sizeof(int32_t));
  return out;
}

std::vector<int32_t> DeviceInts::ToVector() const {
  std::vector<int32_t> out(n_);
  if (n_ > 0)
    AllocatorFor(device()).memory().CopyToHost(ptr(), out.data(), out.size() * sizeof(int32_t));
  return out;
}

}  // namespace tvlab
