#ifndef TVLAB_FRAMEWORK_SPEC_SPEC_DEFAULTS_H_
#define TVLAB_FRAMEWORK_SPEC_SPEC_DEFAULTS_H_

// Writing every default into a spec, so a run records what it used.

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Writes every default explicitly: plugin names left out get their kind's
// default from the kind table (framework/interfaces/plugin_kinds.h), then
// scalars, and each plugin's options message with its own defaults; the
// old optimizer and schedule spellings become the plugin forms first
// (old_spellings.h). Idempotent; leaves unknown plugins to validation.
void ResolveDefaults(Experiment* spec);

// For a valid spec: replaces "0 = automatic" sizes with the sizes the model
// will be built with, so spec.resolved.pbtxt says what ran. Each plugin
// resolves its own options (e.g. MLA's kv_latent_dim and rope_head_dim,
// GQA's num_kv_heads, the additive score's hidden_size) and the FFN plugin
// resolves model.d_ff; model.num_decoder_layers 0 becomes num_layers for
// encoder-decoder models. Building from the result gives the same model.
void ResolveAutomaticSizes(Experiment* spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_SPEC_DEFAULTS_H_
