#ifndef TVLAB_FRAMEWORK_MODEL_MODEL_SPEC_H_
#define TVLAB_FRAMEWORK_MODEL_MODEL_SPEC_H_

// The model part of a spec: its sizes as plugins see them, and its
// validation (fields, every model plugin's options through the kind table,
// and the capability pairing of position and layout plugins).

#include <cstdint>
#include <string>

#include "framework/core/problems.h"
#include "framework/interfaces/model_dims.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// The sizes plugins are built and validated against.
ModelDims ModelDimsFromSpec(const ModelSpec& model);

// Every model plugin kind's name and options (through the kind table), and
// the capability pairing of position and layout, of the model's settings
// (spec.model().attention, position, norm, ffn; a layer's: LayerExperiment).
void ValidateModelPlugins(const Experiment& spec, const ModelDims& dims, Problems* problems);

// Adds every problem of spec.model() to `problems`. `task_length` is the
// task's longest sequence (0 when the task did not validate): plugins are
// validated at model.max_seq_len, or at the task's length when that is 0.
void ValidateModelSpec(const Experiment& spec, int64_t task_length, Problems* problems);

// model.tie_embeddings against the task: the tied head must produce the
// vocabulary (`head_outputs`, HeadOutputs(task), equal to `vocab`), so not
// a pooled classifier's classes. Does nothing when tying is off.
void ValidateTiedEmbeddings(const Experiment& spec, int64_t vocab, int64_t head_outputs, Problems* problems);

// eval.context_length against the task and the position plugin: the task
// must evaluate at that length (`task_eval_length`, Task::eval_length()),
// and a position plugin with bounded positions (kBoundedPositions: learned)
// cannot evaluate past model.max_seq_len (the task's training length when
// 0). Does nothing when eval.context_length is 0.
void ValidateEvalContext(const Experiment& spec, int64_t task_length, int64_t task_eval_length,
                         Problems* problems);
// The same checks for one evaluation length named `field` in messages
// (e.g. "eval.context_lengths[2]"), whose task evaluates at
// `task_eval_length`.
void ValidateEvalContextAt(const Experiment& spec, const std::string& field, int64_t eval_length,
                           int64_t task_length, int64_t task_eval_length, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_MODEL_SPEC_H_
