// nccl_reducer.h in builds without --config=cuda: no NCCL, said plainly.

#include "framework/distributed/nccl_reducer.h"

namespace tvlab {

bool NcclAvailable() { return false; }

absl::StatusOr<std::unique_ptr<GradientReducer>> MakeNcclGradientReducer(Communicator*,
                                                                 std::unique_ptr<GradientReducer>) {
  return absl::FailedPreconditionError(
      "this build has no NCCL; rebuild with --config=cuda for multi-GPU data parallelism");
}

}  // namespace tvlab
