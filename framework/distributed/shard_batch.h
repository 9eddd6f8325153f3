#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_SHARD_BATCH_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_SHARD_BATCH_H_

// A rank's part of a global batch: rows [rank * B / size, (rank + 1) * B / size),
// every row exactly as in the global batch (same length T, same padding), so
// a row's forward pass is the one a single process computes for it.

#include "framework/interfaces/task.h"

namespace tvlab {

// REQUIRES: global.batch % size == 0 (ValidateDataParallel checks the spec).
Batch ShardBatch(const Batch& global, int rank, int size);

// Target tokens the loss averages over (targets other than kIgnoreTarget).
int64_t TargetTokens(const Batch& batch);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_SHARD_BATCH_H_
