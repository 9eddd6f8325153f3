#ifndef TVLAB_FRAMEWORK_INTERFACES_FFN_H_
#define TVLAB_FRAMEWORK_INTERFACES_FFN_H_

// FFN: the position-wise feed-forward sublayer (ReLU, GELU, SwiGLU, ...).

#include "framework/autograd/var.h"
#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/nn/module.h"

namespace tvlab {

class Ffn : public Module {
 public:
  // x (B, T, C) -> (B, T, C)
  virtual Var Forward(const Var& x, const ForwardContext& ctx) const = 0;
};

using FfnEntry = PluginEntry<Ffn, ModelDims>;
Registry<FfnEntry>& FfnRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_FFN(name, Class, Options) \
  TVLAB_REGISTER_PLUGIN(FfnRegistry, Ffn, ModelDims, name, Class, Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_FFN_H_
