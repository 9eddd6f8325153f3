#ifndef TVLAB_FRAMEWORK_AUTOGRAD_GRAD_ACCUMULATION_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_GRAD_ACCUMULATION_H_

// autograd-internal: how gradients are summed into a node without copies.
// The ops' closures (ops*.cc) call AccumulateOwnedGrad for a gradient they
// have just computed into a fresh tensor (dx of a matmul, a unary op, a
// norm ...), and AccumulateGrad (var.h) for one that may be shared (the
// output gradient an Add passes through unchanged).

#include "framework/autograd/var.h"

namespace tvlab {

// As AccumulateGrad, for a `grad` nobody else holds or will write: the first
// gradient of `node` takes it over (no clone), later ones are added into
// node.grad in place.
void AccumulateOwnedGrad(Node& node, Tensor&& grad);

// node.grad's storage when a gradient may be added into it in place (it is
// defined and its own, as AccumulateOwnedGrad would add into it), else
// null. An op that can add as it writes (a GEMM with beta 1: c = product +
// c, one IEEE addition, the bits of AccumulateOwnedGrad's separate add)
// writes there instead of into a fresh tensor: one pass and one buffer
// fewer. Null for a node that needs no gradient.
float* GradToAddInto(Node& node);

// node.grad's storage when it has a gradient so far (its own or shared:
// it is only read), else null (also for a node that needs no gradient).
// An op that adds it as it writes its own gradient into a fresh tensor
// (Backend::NormalizeBackwardAdd: sum = so far + its dx, one IEEE addition,
// the bits of AccumulateOwnedGrad's add) hands the sum over with
// SetSummedGrad: one pass, and no separate add.
const float* GradSoFar(const Node& node);

// node.grad = sum, a fresh tensor holding node's gradient so far plus an
// op's (see GradSoFar); node owns it from now on.
void SetSummedGrad(Node& node, Tensor&& sum);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_GRAD_ACCUMULATION_H_
