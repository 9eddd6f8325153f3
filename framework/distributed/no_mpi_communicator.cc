// StartMpi in a build without MPI (--config=nompi): a launch by mpirun is
// refused with what to do, never run as N unrelated single processes.

#include "absl/strings/str_cat.h"
#include "framework/distributed/communicator.h"

namespace tvlab {

absl::StatusOr<std::unique_ptr<Communicator>> StartMpi() {
  return absl::FailedPreconditionError(absl::StrCat(
      "launched by mpirun with ", LaunchedWorldSize(),
      " processes, but this binary was built without MPI (--config=nompi); rebuild it without "
      "--config=nompi (needs Open MPI: bash tools/setup.sh), or run it as one process"));
}

void FinishMpi() {}

}  // namespace tvlab
