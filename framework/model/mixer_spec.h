#ifndef TVLAB_FRAMEWORK_MODEL_MIXER_SPEC_H_
#define TVLAB_FRAMEWORK_MODEL_MIXER_SPEC_H_

// Validation of a recurrent mixer layout (kRecurrentMixer,
// framework/interfaces/capabilities.h; docs/mixers.md) against the rest of
// the model spec: a mixer is causal self-attention that computes no
// attention scores or weights, so it refuses, naming the field and the fix,
// every option it cannot honour: a family other than DECODER_ONLY, a score
// plugin other than the default, and the model.attention options window,
// logit_softcap, sink, qk_norm and output_gate. Positions inside attention
// (rope, alibi, t5_bias, ...), runtime.attention "fused" and
// model.value_residual are refused through the capabilities the mixer does
// not declare (model_spec.cc, fused_request.cc, value_residual.cc).
// Runs per layer too (ValidateModelPlugins on each layer's spec), so a
// hybrid's mixer layers are checked with their own settings.

#include "framework/core/problems.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

void CheckRecurrentMixer(const Experiment& spec, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_MIXER_SPEC_H_
