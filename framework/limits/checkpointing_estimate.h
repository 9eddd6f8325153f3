#ifndef TVLAB_FRAMEWORK_LIMITS_CHECKPOINTING_ESTIMATE_H_
#define TVLAB_FRAMEWORK_LIMITS_CHECKPOINTING_ESTIMATE_H_

// How train.activation_checkpointing changes the memory estimate's
// activation parts of one training pass (memory_estimate.cc).

#include <vector>

#include "framework/limits/memory_estimate.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// `parts`: a pass's activations without checkpointing, named as
// memory_estimate.cc names them; `blocks`: the model's Transformer blocks;
// `block_inputs`: every block's input (B x T x C per block). BLOCK: the
// blocks' parts are held for one block at a time, plus the block inputs.
// SELECTIVE: each block keeps its products (5 of the 12 B x T x C per
// attention sublayer: Q, K, V, the attention output and the output
// projection; 1 of the 3 B x T x F of the FFN and of the 3 score tensors; the
// fused kernel's log-sum-exps and the query chunks' outputs whole), and the
// rest is held for one block at a time, plus the block inputs. NONE (or a
// single block): unchanged.
void ApplyActivationCheckpointing(TrainSpec::ActivationCheckpointing setting, double blocks,
                                  const MemoryPart& block_inputs, std::vector<MemoryPart>* parts);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_LIMITS_CHECKPOINTING_ESTIMATE_H_
