#ifndef TVLAB_FRAMEWORK_MODEL_ATTENTION_OPTIONS_SPEC_H_
#define TVLAB_FRAMEWORK_MODEL_ATTENTION_OPTIONS_SPEC_H_

// The attention options of the spec (model.attention.logit_softcap, sink,
// qk_norm, output_gate) to the attention kit's AttentionOptions, and their
// validation. Every layout honours them (framework/attention/attention_extras.h).

#include "framework/attention/attention_extras.h"
#include "framework/core/problems.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// Adds a problem naming the field for each invalid option of `attention`
// (found at `path`, e.g. "model.attention").
void ValidateAttentionOptions(const AttentionSpec& attention, const std::string& path,
                              Problems* problems);

// REQUIRES: ValidateAttentionOptions found no problem.
AttentionOptions AttentionOptionsFromSpec(const AttentionSpec& attention);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_ATTENTION_OPTIONS_SPEC_H_
