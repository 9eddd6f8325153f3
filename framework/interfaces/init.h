#ifndef TVLAB_FRAMEWORK_INTERFACES_INIT_H_
#define TVLAB_FRAMEWORK_INTERFACES_INIT_H_

// Initializer: how a model's parameters start, and the parametrisation that
// goes with it (model.init). Every module declares each parameter with an
// initializer (framework/nn/module.h, e.g. Linear's U(-1/sqrt(in),
// 1/sqrt(in))); an init plugin sees each declaration with the parameter's
// name, shape and role and returns the Init actually drawn (the `default`
// plugin returns the declaration: today's initialisation). A
// parametrisation such as µP also scales learning rates per parameter, the
// attention logits and the head's input; a plugin that does not returns the
// neutral values below, and the model is then bitwise the one without it.
// Draws stay keyed by (seed, parameter name), so an init is deterministic
// for a seed whatever the construction order.

#include <memory>
#include <string>

#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/optimizer.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// What an init plugin is made and validated from. `spec` is the whole
// experiment (a parametrisation checks the optimizer and model settings it
// has a rule for); null only in tests that build one over dims alone.
struct InitArgs {
  ModelDims dims;
  const Experiment* spec = nullptr;
};

// One parameter as the module declared it.
struct InitParam {
  std::string name;  // "decoder.layers.0.ffn.w_2.weight"
  Shape shape;       // (out, in) for a Linear's weight
  ParamRole role = ParamRole::kMatrix;  // RoleOfParameter(name, rank)
  Init declared;     // the module's own initializer
};

class Initializer {
 public:
  virtual ~Initializer() = default;
  // The initializer drawn for `p` (kNormal: std; kUniform: bound).
  virtual Init InitFor(const InitParam& p) const = 0;
  // Multiplies the optimizer group's lr_multiplier of `p` (µP: hidden
  // matrices base_width / width under AdamW). 1 = unchanged.
  virtual float LrMultiplier(const InitParam& p) const {
    (void)p;
    return 1.0f;
  }
  // The attention logit scale for a head size `head_dim` (µP: 1/hs up to a
  // constant), or 0 to keep the score plugin's own (1/sqrt(hs)).
  virtual float AttentionScale(int64_t head_dim) const {
    (void)head_dim;
    return 0.0f;
  }
  // Multiplies the output head's input (µP: base_width / width); 1 = none.
  virtual float HeadInputScale() const { return 1.0f; }
};

using InitEntry = PluginEntry<Initializer, InitArgs>;
Registry<InitEntry>& InitRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_INIT(name, Class, Options) \
  TVLAB_REGISTER_PLUGIN(InitRegistry, Initializer, InitArgs, name, Class, Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_INIT_H_
