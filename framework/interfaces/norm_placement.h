#ifndef TVLAB_FRAMEWORK_INTERFACES_NORM_PLACEMENT_H_
#define TVLAB_FRAMEWORK_INTERFACES_NORM_PLACEMENT_H_

// NormPlacement: the residual wiring around each sublayer (attention, FFN).
// Post-LN: LN(x + f(x)). Pre-LN: x + f(LN(x)), plus a final norm after the
// stack. A placement plugin creates one ResidualWrapper per sublayer and
// makes its norms with the factory it is given, so it works with any
// Normalization plugin (sandwich norm would make two per sublayer).

#include <functional>
#include <memory>

#include "framework/autograd/var.h"
#include "framework/interfaces/model_dims.h"
#include "framework/interfaces/normalization.h"
#include "framework/interfaces/plugin_entry.h"
#include "framework/nn/module.h"

namespace tvlab {

using Sublayer = std::function<Var(const Var&)>;

class ResidualWrapper : public Module {
 public:
  // x (B, T, C); `sublayer` maps (B, T, C) -> (B, T, C) (dropout included).
  virtual Var Forward(const Var& x, const Sublayer& sublayer) const = 0;
};

struct PlacementArgs {
  ModelDims dims;
  std::function<std::unique_ptr<Normalization>()> make_norm;
};

class NormPlacement {
 public:
  virtual ~NormPlacement() = default;
  virtual std::unique_ptr<ResidualWrapper> Wrap() const = 0;
  // Whether the stack needs a norm after its last block (Pre-LN does: the
  // residual stream is never normalized otherwise).
  virtual bool NeedsFinalNorm() const = 0;
};

using NormPlacementEntry = PluginEntry<NormPlacement, PlacementArgs>;
Registry<NormPlacementEntry>& NormPlacementRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_NORM_PLACEMENT(name, Class, Options)                                \
  TVLAB_REGISTER_PLUGIN(NormPlacementRegistry, NormPlacement, PlacementArgs, name, Class, \
                        Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_NORM_PLACEMENT_H_
