#include "framework/distributed/data_parallel_spec.h"

#include "absl/strings/str_cat.h"

namespace tvlab {

absl::Status ValidateDataParallel(const TrainSpec& train, int world_size) {
  const int64_t batch = train.batch_size();
  if (world_size <= 1 || batch % world_size == 0) return absl::OkStatus();
  const int64_t up = (batch / world_size + 1) * world_size;
  return absl::InvalidArgumentError(absl::StrCat(
      "train.batch_size: ", batch, " does not divide among the ", world_size,
      " ranks of this mpirun (train.batch_size is the global batch; each rank trains on an equal "
      "contiguous shard of it): use a multiple of ", world_size, ", e.g. --set train.batch_size=", up,
      ", or launch with -np dividing ", batch));
}

}  // namespace tvlab
