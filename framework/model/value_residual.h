#ifndef TVLAB_FRAMEWORK_MODEL_VALUE_RESIDUAL_H_
#define TVLAB_FRAMEWORK_MODEL_VALUE_RESIDUAL_H_

// The value residual (model.value_residual; Zhou et al. 2024, ResFormer, in
// modded-nanogpt's form): in every layer l > 0 of a stack, self-attention's
// new values become
//   v_l' = v_l + lambda_l * (v_0 - v_l)      (B, G, S_new, hs)
// where v_0 are the first layer's values of the same tokens in the same
// pass and lambda_l is one learned scalar per layer. The mix is per token,
// so with a KV cache each layer caches its mixed values and a decoding step
// needs only the first layer's values of its new tokens.

#include <memory>

#include "framework/autograd/var.h"
#include "framework/core/problems.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// One pass through a stack: the first layer's new values, for the others.
struct ValueResidualState {
  Var first;  // (B, G, S_new, hs)
};

// A block's part: the first layer records, the others mix with parameter
// "lambda" (1).
class ValueResidual : public Module {
 public:
  ValueResidual(bool first_layer, float lambda_init);
  // v (B, G, S_new, hs) -> the values this layer attends with and caches.
  // REQUIRES: the first layer ran first in this pass (same shape).
  Var Mix(const Var& v, ValueResidualState* state) const;

 private:
  Var lambda_;  // (1); undefined in the first layer
};

// model.value_residual against the layouts of every layer: each must declare
// kAttendsOnceWithNewValues, and every layer of a stack must have the first
// layer's layout and layout options (the mixed values must have one shape).
void ValidateValueResidual(const Experiment& spec, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_VALUE_RESIDUAL_H_
