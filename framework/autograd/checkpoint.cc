#include "framework/autograd/checkpoint.h"

namespace tvlab {

Var Checkpoint(const CheckpointedFunction& fn, const std::vector<Var>& inputs) {
  Tensor out;
  {
    NoGradGuard no_tape;
    out = fn(inputs).value();
  }
  return MakeResult(std::move(out), inputs, [fn, inputs](const Tensor& grad) {
    std::vector<Var> leaves;  // the same values, as leaves of a fresh tape
    leaves.reserve(inputs.size());
    for (const Var& in : inputs) leaves.emplace_back(in.value(), in.requires_grad());
    Var recomputed = fn(leaves);
    Backward(recomputed, grad);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].requires_grad() && leaves[i].grad().defined())
        AccumulateGrad(*inputs[i].node(), leaves[i].grad());
    }
  });
}

}  // namespace tvlab
