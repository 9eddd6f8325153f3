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
    // Each leaf continues its input's sum so far (MoveGrad): an input read
    // here and elsewhere (an encoder output every decoder block reads) gets
    // its contributions added one by one in the taped order, not summed
    // per checkpoint first, so the result is the same to the bit.
    // An input passed twice continues its sum in its first leaf only.
    std::vector<bool> first(inputs.size(), true);
    for (size_t i = 0; i < inputs.size(); ++i)
      for (size_t j = 0; j < i && first[i]; ++j) first[i] = inputs[j].node() != inputs[i].node();
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].requires_grad() && first[i]) MoveGrad(*inputs[i].node(), *leaves[i].node());
    Backward(recomputed, grad);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      if (first[i]) {
        MoveGrad(*leaves[i].node(), *inputs[i].node());
      } else if (leaves[i].grad().defined()) {
        AccumulateGrad(*inputs[i].node(), leaves[i].grad());
      }
    }
  });
}

}  // namespace tvlab
