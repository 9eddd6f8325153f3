#ifndef TVLAB_FRAMEWORK_SPEC_OPTIMIZER_SPELLING_H_
#define TVLAB_FRAMEWORK_SPEC_OPTIMIZER_SPELLING_H_

// The old spelling of the optimizer, `train.optimizer { adamw { ... } }`
// (from before optimizers were plugins), read as the plugin form, so that
// older configs, grids and `--set train.optimizer.adamw.lr=...` keep
// working and spec.resolved.pbtxt always holds the plugin form.

#include "framework/schema/experiment.pb.h"

namespace tvlab {

// When train.optimizer.adamw is set and train.optimizer.plugin is empty or
// "adamw": sets the plugin to "adamw", copies every field set in the old
// message onto the plugin's options (same names: lr, beta1, beta2, eps,
// weight_decay; over options already there, so a later --set of the old
// spelling overrides), maps decay_biases_and_norms onto groups.bias and
// groups.norm weight_decay and decay_embeddings onto groups.embedding's
// (where set), and clears the old message. Otherwise (another plugin, or
// the adamw plugin not linked) leaves the spec to validation, which names
// the conflict.
void ResolveOldOptimizerSpelling(Experiment* spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_OPTIMIZER_SPELLING_H_
