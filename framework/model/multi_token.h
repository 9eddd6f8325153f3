#ifndef TVLAB_FRAMEWORK_MODEL_MULTI_TOKEN_H_
#define TVLAB_FRAMEWORK_MODEL_MULTI_TOKEN_H_

// Multi-token prediction (model.multi_token_prediction; Gloeckle et al.
// 2024, "Better & Faster Large Language Models via Multi-token
// Prediction"): on a decoder's shared trunk, head k = 2 .. n predicts the
// token k positions ahead (the main head is k = 1). Head k's loss is the
// mean cross-entropy of its logits at position t against the token at
// t + k, i.e. the row's target at t + k - 1 (targets[t] is the token after
// input t); positions whose target is past the row or ignored count in no
// loss. The losses are emitted on the auxiliary-output channel
// (framework/autograd/auxiliary_outputs.h) as "mtp.head_<k>_loss" with the
// spec's weights, so the training loop adds them to the main loss and logs
// them; nothing is computed outside a collecting (training) forward, so
// evaluation and its metrics are the main head's alone.

#include <cstdint>
#include <memory>
#include <vector>

#include "framework/core/problems.h"
#include "framework/interfaces/task.h"
#include "framework/model/block_stack.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

class MultiTokenHeads : public Module {
 public:
  // `block`: the trunk's last layer's factory (a LAYER head is one such
  // block; its value residual is left out: a head has no first layer);
  // `unembedding`: the model's head, shared by LAYER heads.
  MultiTokenHeads(const MultiTokenPredictionSpec& spec, int64_t d_model, int64_t vocab, bool bias,
                  const BlockFactory& block, float dropout, const nn::Linear* unembedding);
  int64_t num_extra() const { return static_cast<int64_t>(extra_.size()); }
  // The extra heads' logits, head k = 2 .. n in order, each (B, T, V), from
  // the trunk's output h (B, T, C) (after its final norm) and the trunk's
  // stack input (mask, positions; no caches).
  std::vector<Var> Logits(const Var& h, const StackInput& in) const;
  // In a collecting forward: head k's loss against `batch`'s targets,
  // emitted as "head_<k>_loss". A no-op outside one.
  void EmitLosses(const std::vector<Var>& logits, const Batch& batch) const;
  // Head k's targets (B, T): targets[b, t + k - 1], or kIgnoreTarget past
  // the row. Public for tests.
  static std::vector<int32_t> ShiftedTargets(const Batch& batch, int64_t k);

 private:
  struct Head {
    const BlockStack* layer = nullptr;  // LAYER heads
    const nn::Linear* linear = nullptr; // LINEAR heads
  };
  std::vector<Head> extra_;
  const nn::Linear* unembedding_;
};

// The problems of model.multi_token_prediction.
void ValidateMultiTokenPrediction(const Experiment& spec, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_MULTI_TOKEN_H_
