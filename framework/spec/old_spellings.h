#ifndef TVLAB_FRAMEWORK_SPEC_OLD_SPELLINGS_H_
#define TVLAB_FRAMEWORK_SPEC_OLD_SPELLINGS_H_

// Spellings of the spec from before optimizers and schedules were plugins,
// read as the plugin forms, so that older configs, grids and `--set
// train.optimizer.adamw.lr=...` / `--set train.lr_schedule.warmup_steps=...`
// keep working and spec.resolved.pbtxt always holds the plugin forms.

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

// When any of train.lr_schedule's old fields (kind, warmup_steps,
// min_lr_ratio) is set: the plugin becomes the kind's ("WARMUP_COSINE" ->
// "warmup_cosine"; without a kind, the plugin named, else "constant"), its
// options keep what the previous plugin's options had under the same names,
// take the old warmup_steps and min_lr_ratio where set (where the plugin has
// them: constant has no floor, as before), and the old fields are cleared.
// An unknown or unlinked plugin is left to validation.
void ResolveOldScheduleSpelling(Experiment* spec);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_SPEC_OLD_SPELLINGS_H_
