#include "plugins/optimizer/adafactor/device_math.h"

#include <cmath>

#include "framework/tensor/device_memory.h"

namespace tvlab {

Tensor Apply(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  Tensor out = Tensor::Empty(out_shape);
  CurrentBackend().Binary(op, a.ptr(), a.shape(), b.ptr(), b.shape(), out.ptr(), out_shape);
  return out;
}

Tensor ApplyScalar(BinaryOp op, const Tensor& a, float s) {
  return Apply(op, a, Tensor::Scalar(s), a.shape());
}

Tensor SumTo(const Tensor& x, const Shape& shape) {
  Tensor out = Tensor::Empty(shape);
  CurrentBackend().ReduceSumTo(x.ptr(), x.shape(), out.ptr(), shape);
  return out;
}

void Interpolate(Tensor& v, const Tensor& x, float beta) {
  const Tensor kept = ApplyScalar(BinaryOp::kMul, v, beta);
  const Tensor added = ApplyScalar(BinaryOp::kMul, x, 1.0f - beta);
  CurrentBackend().Binary(BinaryOp::kAdd, kept.ptr(), kept.shape(), added.ptr(), added.shape(), v.ptr(),
                          v.shape());
}

Tensor InverseSqrt(const Tensor& x) {
  Tensor root = Tensor::Empty(x.shape());
  CurrentBackend().Unary(UnaryOp::kSqrt, x.ptr(), root.ptr(), x.numel());
  Tensor one = Tensor::Scalar(1.0f);
  return Apply(BinaryOp::kDiv, one, root, x.shape());
}

double Rms(const Tensor& x) {
  DeviceInts acc = DeviceInts::Empty(2);  // 8 bytes, used as one double
  double sum = 0.0;
  AllocatorFor(acc.device()).memory().CopyFromHost(&sum, acc.ptr(), sizeof(double));
  CurrentBackend().SumSquares(x.ptr(), x.numel(), reinterpret_cast<double*>(acc.ptr()));
  AllocatorFor(acc.device()).memory().CopyToHost(acc.ptr(), &sum, sizeof(double));
  return std::sqrt(sum / static_cast<double>(x.numel()));
}

}  // namespace tvlab
