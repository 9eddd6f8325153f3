#include "framework/autograd/checkpoint.h"

#include "framework/autograd/auxiliary_outputs.h"
#include "framework/core/check.h"

namespace tvlab {

Var Checkpoint(const CheckpointedFunction& fn, const std::vector<Var>& inputs) {
  Tensor out;
  {
    NoGradGuard no_tape;
    // An auxiliary loss emitted here would have no tape (and the recompute
    // would emit it again): refused, so it is never silently gradient-free.
    AuxiliaryOutputs inside;
    AuxiliaryScope scope(AuxiliaryOutputs::Current() != nullptr ? &inside : nullptr);
    out = fn(inputs).value();
    TVLAB_CHECK(inside.losses().empty() && inside.statistics().empty())
        << "a module emitted an auxiliary output inside Checkpoint(); emit it outside the checkpointed function";
  }
  return MakeResult(std::move(out), inputs, [fn, inputs](const Tensor& grad) {
    std::vector<Var> leaves;  // the same values, as leaves of a fresh tape
    leaves.reserve(inputs.size());
    for (const Var& in : inputs) leaves.emplace_back(in.value(), in.requires_grad());
    AuxiliaryScope none(nullptr);  // the forward's outputs were taken already
    Var recomputed = fn(leaves);
    Backward(recomputed, grad);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].requires_grad() && leaves[i].grad().defined())
        AccumulateGrad(*inputs[i].node(), leaves[i].grad());
    }
  });
}

}  // namespace tvlab
