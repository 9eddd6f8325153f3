#ifndef TVLAB_PLUGINS_OPTIMIZER_ADAFACTOR_DEVICE_MATH_H_
#define TVLAB_PLUGINS_OPTIMIZER_ADAFACTOR_DEVICE_MATH_H_

// Adafactor's arithmetic as calls of the backend's elementwise, reduction
// and sum-of-squares kernels, on tensors of the current backend's device.

#include "framework/backend/backend.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

// out = a OP b, NumPy broadcasting to out's shape.
Tensor Apply(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& out_shape);
// a OP the scalar s.
Tensor ApplyScalar(BinaryOp op, const Tensor& a, float s);
// x summed to `shape` (the dimensions x broadcasts over from it).
Tensor SumTo(const Tensor& x, const Shape& shape);
// v <- beta v + (1 - beta) x (same shapes), in place.
void Interpolate(Tensor& v, const Tensor& x, float beta);
// 1 / sqrt(x), elementwise.
Tensor InverseSqrt(const Tensor& x);
// sqrt(mean(x^2)), read back to the host (one scalar).
double Rms(const Tensor& x);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_OPTIMIZER_ADAFACTOR_DEVICE_MATH_H_
