#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_DATA_PARALLEL_SPEC_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_DATA_PARALLEL_SPEC_H_

// What a spec must satisfy to train on `world_size` ranks: the global batch
// (train.batch_size) splits into equal shards.

#include "absl/status/status.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// InvalidArgument naming the field and a batch size that would work.
absl::Status ValidateDataParallel(const TrainSpec& train, int world_size);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_DATA_PARALLEL_SPEC_H_
