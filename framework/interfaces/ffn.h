#ifndef TVLAB_FRAMEWORK_INTERFACES_FFN_H_
#define TVLAB_FRAMEWORK_INTERFACES_FFN_H_

// FFN: the position-wise feed-forward sublayer (ReLU, GELU, SwiGLU, ...).
//
// Auxiliary outputs (framework/autograd/auxiliary_outputs.h; the same for
// every plugin kind): an FFN may add named auxiliary losses, each with a
// coefficient, and named statistics during a training forward, e.g. a
// mixture of experts' load-balancing loss and expert load:
//   constructor:  DeclareAuxiliaryLoss("load_balancing_loss", options.coefficient());
//                 DeclareAuxiliaryStatistic("expert_load.0");
//   Forward:      if (CollectingAuxiliaryOutputs()) {
//                   EmitAuxiliaryLoss("load_balancing_loss", loss);   // scalar Var on the tape
//                   EmitAuxiliaryStatistic("expert_load.0", load_0);  // scalar Var
//                 }
// The training loop adds coefficient * loss to the loss it backpropagates
// (the logged `loss` stays the task's) and logs every declared output under
// its full name ("decoder.layers.0.ffn.load_balancing_loss"), averaged over
// the logging interval: a train_log.csv column, TensorBoard's
// auxiliary/<name>, metrics.json's auxiliary_outputs. Outside a collecting
// training forward (evaluation, decoding) nothing is emitted. Values stay on
// the device; the loop reads one scalar per output per micro-batch. The
// conformance suite gradient-checks each declared loss and checks that
// every declared output is emitted. Not inside autograd Checkpoint().

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
