#ifndef TVLAB_FRAMEWORK_INTERFACES_OPTIMIZER_H_
#define TVLAB_FRAMEWORK_INTERFACES_OPTIMIZER_H_

// Optimizer: updates the parameters from their gradients, one step at a
// time (AdamW, SGD, ...). A plugin gets every parameter with its role
// (embedding, head, norm, bias, matrix) and its group's settings (the
// spec's train.optimizer.groups): a learning-rate multiplier and whether
// weight decay applies. Its state (moments, momentum buffers) is a list of
// named tensors that checkpoints save and restore; a step after a restore
// is bitwise the step the uninterrupted run takes.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/interfaces/plugin_entry.h"

namespace tvlab {

enum class ParamRole { kEmbedding, kHead, kNorm, kBias, kMatrix };

// "embedding", "head", "norm", "bias", "matrix" (the ParamGroups fields).
const char* ParamRoleName(ParamRole role);

// The role of the parameter `name` of rank `rank` (experiment.proto's
// ParamGroups says the rule): rank < 2 is a norm (a "norm" in the name) or
// a bias; rank >= 2 is an embedding (under "embedding" or "position"), the
// head ("head.") or a matrix.
ParamRole RoleOfParameter(const std::string& name, int64_t rank);

// One parameter as an optimizer sees it.
struct OptimizerParam {
  std::string name;  // "encoder.layers.0.ffn.w_1.weight": state tensors are "<name>.<slot>"
  Var param;
  ParamRole role = ParamRole::kMatrix;
  float lr_multiplier = 1.0f;  // the step's rate is lr * lr_multiplier
  bool decay = true;           // weight decay applies
};

// What an optimizer plugin is made from (empty when only its options are
// validated).
struct OptimizerArgs {
  std::vector<OptimizerParam> params;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // One update from the parameters' current gradients, at rate `lr` (the
  // schedule's) times each parameter's lr_multiplier. A parameter whose
  // gradient is undefined is skipped (as PyTorch skips grad=None).
  virtual void Step(float lr) = 0;
  // The options' learning rate, which the schedule scales.
  virtual float lr() const = 0;
  // The state as named Vars sharing storage ("<param>.<slot>", e.g.
  // "w.exp_avg"), for checkpoints; the same names and shapes on every call.
  virtual std::vector<std::pair<std::string, Var>> StateTensors() const = 0;

  // Steps taken (bias corrections count them); restored from a checkpoint.
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }

 protected:
  int64_t steps_ = 0;
};

// The distinct lr_multipliers of `params`, in order of first appearance:
// an optimizer makes one kernel call per rate (one when all share it).
std::vector<float> DistinctLrMultipliers(const std::vector<OptimizerParam>& params);

// The bytes of an optimizer's state (metrics.json: optimizer_state_bytes).
int64_t OptimizerStateBytes(const Optimizer& optimizer);

using OptimizerEntry = PluginEntry<Optimizer, OptimizerArgs>;
Registry<OptimizerEntry>& OptimizerRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_OPTIMIZER(name, Class, Options) \
  TVLAB_REGISTER_PLUGIN(OptimizerRegistry, Optimizer, OptimizerArgs, name, Class, Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_OPTIMIZER_H_
