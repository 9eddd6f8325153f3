#ifndef TVLAB_FRAMEWORK_TRAIN_TRAIN_SPEC_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAIN_SPEC_H_

// Validation of the spec parts training and evaluation own: `train` (steps,
// batches, optimizer, schedule, clipping, checkpoints) and `eval` (example
// counts, batch size, and its decoding, checked by framework/model).

#include "framework/core/problems.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

void ValidateTrainSpec(const TrainSpec& train, Problems* problems);
void ValidateEvalSpec(const EvalSpec& eval, Problems* problems);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAIN_SPEC_H_
