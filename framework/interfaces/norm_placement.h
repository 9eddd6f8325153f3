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
  // The blocks are the decoder stack of an ENCODER_DECODER model
  // (dims.decoder_layers > 0): placements whose constants depend on the
  // stack (DeepNorm's alpha and beta) read it; false for every other stack.
  bool in_decoder_stack = false;
};

class NormPlacement {
 public:
  virtual ~NormPlacement() = default;
  virtual std::unique_ptr<ResidualWrapper> Wrap() const = 0;
  // Whether the stack needs a norm after its last block (Pre-LN does: the
  // residual stream is never normalized otherwise).
  virtual bool NeedsFinalNorm() const = 0;
  // The gain the block multiplies the initial values of its residual
  // branches' output-side weights by, after InitializeParameters: the
  // attention value and output projections (w_v, w_uv, w_o, cross-attention
  // included) and every FFN parameter (DeepNorm's beta, Wang et al. 2022).
  // 1 = untouched (TransformerBlock::AfterInitialize applies it). It
  // multiplies whatever model.init drew, so it stays with the placement:
  // existing configs' initial values depend on it bit for bit. DeepNet's
  // full init is the init plugin `deepnorm`, which refuses a placement gain
  // beside its own (docs/init.md).
  virtual float SublayerInitGain() const { return 1.0f; }
};

using NormPlacementEntry = PluginEntry<NormPlacement, PlacementArgs>;
Registry<NormPlacementEntry>& NormPlacementRegistry();

}  // namespace tvlab

#define TVLAB_REGISTER_NORM_PLACEMENT(name, Class, Options)                                \
  TVLAB_REGISTER_PLUGIN(NormPlacementRegistry, NormPlacement, PlacementArgs, name, Class, \
                        Options)

#endif  // TVLAB_FRAMEWORK_INTERFACES_NORM_PLACEMENT_H_
