#ifndef TVLAB_FRAMEWORK_AUTOGRAD_OPS_INTERNAL_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_OPS_INTERNAL_H_

// autograd-internal: helpers the op files (ops_*.cc) share. Not part of
// the autograd interface (ops.h).

#include "framework/backend/backend.h"
#include "framework/tensor/tensor.h"

namespace tvlab {
namespace ops_internal {

inline Backend& B() { return CurrentBackend(); }

// NumPy broadcasting of two shapes (CHECK-fails when they do not broadcast).
Shape BroadcastShape(const Shape& a, const Shape& b);

// a op b with broadcasting, into a new tensor.
Tensor BinaryValue(BinaryOp op, const Tensor& a, const Tensor& b);

// Sums a gradient of the broadcast shape back to `shape`.
Tensor ReduceTo(const Tensor& grad, const Shape& shape);

}  // namespace ops_internal
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_OPS_INTERNAL_H_
