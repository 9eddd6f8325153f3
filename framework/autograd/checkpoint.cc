#include "framework/autograd/checkpoint.h"


#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/kept_outputs.h"
#include "framework/core/check.h"

namespace tvlab {

Var Checkpoint(const CheckpointedFunction& fn, const std::vector<Var>& inputs, CheckpointPolicy policy) {
  using kept_outputs::Mode;
  // kKeepMatMuls: the products this call keeps for its rerun. Inside a
  // selective checkpoint, a kRecomputeAll call (a query chunk) is one kept
  // op: the enclosing store keeps its output, never its internals (no store
  // is current while fn runs), and the enclosing rerun takes the output.
  auto kept = policy == CheckpointPolicy::kKeepMatMuls ? std::make_shared<kept_outputs::Store>() : nullptr;
  Tensor out;
  const bool replayed = policy == CheckpointPolicy::kRecomputeAll && kept_outputs::Take(&out);
  if (!replayed) {
    NoGradGuard no_tape;
    // An auxiliary loss emitted here would have no tape (and the recompute
    // would emit it again): refused, so it is never silently gradient-free.
    AuxiliaryOutputs inside;
    AuxiliaryScope scope(AuxiliaryOutputs::Current() != nullptr ? &inside : nullptr);
    {
      kept_outputs::Scope record(kept.get(), Mode::kRecord);
      out = fn(inputs).value();
    }
    TVLAB_CHECK(inside.losses().empty() && inside.statistics().empty())
        << "a module emitted an auxiliary output inside Checkpoint(); emit it outside the checkpointed function";
    if (!kept) kept_outputs::Keep(out);  // for an enclosing selective checkpoint that records
  }
  return MakeResult(std::move(out), inputs, [fn, inputs, kept](const Tensor& grad) {
    std::vector<Var> leaves;  // the same values, as leaves of a fresh tape
    leaves.reserve(inputs.size());
    for (const Var& in : inputs) leaves.emplace_back(in.value(), in.requires_grad());
    AuxiliaryScope none(nullptr);  // the forward's outputs were taken already
    Var recomputed;
    {
      // The rerun replays this call's kept products (kKeepMatMuls) or
      // computes everything (kRecomputeAll: no store).
      kept_outputs::Scope replay(kept.get(), Mode::kReplay);
      recomputed = fn(leaves);
      TVLAB_CHECK(!kept || kept->tensors.empty())
          << "selective checkpointing: the rerun used " << kept->kept - kept->tensors.size() << " of the "
          << kept->kept << " kept outputs (the checkpointed function is not deterministic)";
    }
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
    kept_outputs::Scope no_store(nullptr, Mode::kRecord);  // nested checkpoints' reruns compute
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
