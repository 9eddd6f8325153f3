#ifndef TVLAB_FRAMEWORK_INTERFACES_CAPABILITIES_H_
#define TVLAB_FRAMEWORK_INTERFACES_CAPABILITIES_H_

// What a plugin needs from, or provides to, the plugins it is combined with.
// A plugin class declares them as
//
//   static constexpr uint32_t kCapabilities = kAppliesRotaryPositions | ...;
//
// (none declared = 0). ValidateExperiment rejects a combination in which one
// plugin needs what the other does not provide, with the reason, before
// anything is built; the attention conformance suite checks that a layout's
// declarations are true.

#include <cstdint>

namespace tvlab {

enum Capability : uint32_t {
  // Position encodings: where they act inside attention.
  kRotatesQueriesAndKeys = 1u << 0,  // needs the layout to call RotateQueryOrKey
  kAddsLogitBias = 1u << 1,          // needs the layout to add LogitBias
  // Position encodings: a property, not a need. Positions exist only up to
  // model.max_seq_len (a learned table), so the plugin cannot extrapolate
  // past it; validation refuses an eval.context_length beyond it.
  kBoundedPositions = 1u << 2,
  // Position encodings: a learned logit bias with one column per model head
  // (t5_bias), so attention must run with model.num_heads query heads;
  // validation refuses it with a layout that declares kAttendsWithFewerHeads.
  kBiasPerModelHead = 1u << 3,
  // Can run inside the fused attention kernel (attend.h), declared
  // statically so that validation's memory estimate knows before anything
  // is built whether (T, S) buffers will exist. The conformance suites check
  // that each declaration agrees with the plugin's virtual:
  kFusableScore = 1u << 4,     // a score: FusedDotProductScale() has a value
  kFusablePosition = 1u << 5,  // a position: FusedLogitBiasFor().fusable
  // Attention layouts: what they do with the position plugin.
  kAppliesRotaryPositions = 1u << 8,  // calls RotateQueryOrKey on self-attention q and k
  kAppliesLogitBias = 1u << 9,        // adds LogitBias to self-attention logits (Attend does)
  // Attention layouts: never runs the fused kernel (its attention is not one
  // Attend of a dot-product score), so runtime.attention "fused" is refused
  // with it. Layouts fuse unless they declare this; the conformance suite
  // checks the declaration both ways.
  kNeverFusesLayout = 1u << 10,
  // Attention layouts: call Attend with fewer query heads than
  // model.num_heads (differential: H/2 heads per softmax map); validation
  // then refuses kBiasPerModelHead positions, a learned sink and the output
  // gate (one parameter per model head each).
  kAttendsWithFewerHeads = 1u << 11,
  // Attention layouts: call Attend once per forward with the new tokens'
  // values (MHA, GQA, MQA), so model.value_residual can mix them there
  // (AttentionInput::mix_values); validation refuses the value residual
  // with any other layout.
  kAttendsOnceWithNewValues = 1u << 12,
  // Attention layouts: a recurrent token mixer (linear attention, GLA,
  // RetNet; docs/mixers.md), not softmax attention. It is causal
  // self-attention only, computes no attention weights (no score plugin,
  // no probe, no window, sink, soft-cap, QK-norm or output gate of
  // model.attention), and decodes with a fixed-size state in the cache
  // (KvCacheBytesPerToken 0, RecurrentStateBytes > 0). Validation refuses
  // what it cannot honour (framework/model/mixer_spec.cc); the attention
  // suite runs its three-forms suite on it and skips the softmax-only cases
  // with this reason.
  kRecurrentMixer = 1u << 13,
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_INTERFACES_CAPABILITIES_H_
