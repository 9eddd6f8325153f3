#ifndef TVLAB_FRAMEWORK_AUTOGRAD_CHECKPOINT_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_CHECKPOINT_H_

// Activation checkpointing (torch.utils.checkpoint, Chen et al. 2016,
// "Training Deep Nets with Sublinear Memory Cost"): trade compute for
// memory by keeping only a block's inputs and recomputing its
// intermediates during backward.

#include <functional>
#include <vector>

#include "framework/autograd/var.h"

namespace tvlab {

using CheckpointedFunction = std::function<Var(const std::vector<Var>& inputs)>;

// What the rerun in backward computes again.
enum class CheckpointPolicy {
  // Everything: only the inputs are kept.
  kRecomputeAll,
  // Selective (Korthikanti et al. 2022, Megatron-LM's selective recompute;
  // torch's selective checkpoint policies that save matmuls): the outputs
  // of the matrix products (MatMul, Linear) and of FusedAttention (its
  // output and log-sum-exp) are kept from the first run and handed back in
  // the rerun; the elementwise ops, norms, activations, dropout and
  // reshapes are computed again from them. Memory between kRecomputeAll
  // and no checkpoint; the rerun costs no GEMM and no attention kernel.
  kKeepMatMuls,
};

// Returns fn(inputs). With gradients enabled and some input requiring one,
// fn runs without recording the tape, so none of its intermediates outlive
// the call; the backward runs fn again with the tape on (on fresh leaves
// holding the same input values) and backpropagates the output gradient
// through that recomputation: inputs get their gradients, and so do
// parameters fn reads directly (a module's weights), during it. Each input's
// gradient sum is continued inside the recomputation (MoveGrad, var.h), so
// the additions happen in the taped order: with a deterministic fn the
// gradients equal the taped ones to the bit (the encoder-decoder case of
// framework/model/activation_checkpointing_test.cc, whose encoder output
// every decoder block reads, checks it).
//
// REQUIRES: fn is deterministic (dropout keyed by counters, as every
// RngStream draw is, qualifies) and its output depends on `inputs` and on
// parameters only. At least one input must require a gradient for the
// parameters to get theirs (the attention queries always do in training).
// With kKeepMatMuls the same holds (the kept tensors are the ones the
// rerun would compute). A kRecomputeAll Checkpoint nested inside one with
// kKeepMatMuls (a query chunk of the attention) counts as one kept op: its
// output is kept and handed back in the enclosing rerun, none of its
// intermediates is, and its own backward reruns it whole.
Var Checkpoint(const CheckpointedFunction& fn, const std::vector<Var>& inputs,
               CheckpointPolicy policy = CheckpointPolicy::kRecomputeAll);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_CHECKPOINT_H_
