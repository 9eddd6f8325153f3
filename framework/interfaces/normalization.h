#ifndef TVLAB_FRAMEWORK_INTERFACES_NORMALIZATION_H_
#define TVLAB_FRAMEWORK_INTERFACES_NORMALIZATION_H_

// Normalization over the model width: LayerNorm, RMSNorm, ...

#include "framework/autograd/var.h"
#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/nn/module.h"

namespace tvlab {

class Normalization : public Module {
 public:
  // x (..., C) -> (..., C)
  virtual Var Forward(const Var& x) const = 0;
};

using NormalizationEntry = PluginEntry<Normalization, ModelDims>;
Registry<NormalizationEntry>& NormalizationRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_NORMALIZATION(name, Class, Options) \
  TVLAB_REGISTER_PLUGIN(NormalizationRegistry, Normalization, ModelDims, name, Class, Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_NORMALIZATION_H_
