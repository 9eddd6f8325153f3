#include "framework/distributed/communicator.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace tvlab {

absl::Status SingleProcess::AllGather(const uint64_t* values, int64_t n, uint64_t* out, const char*) {
  std::memcpy(out, values, static_cast<size_t>(n) * sizeof(uint64_t));
  return absl::OkStatus();
}

namespace {
constexpr char kOnEveryRank[] = "tvlab.distributed/on_every_rank";
}  // namespace

absl::Status OnEveryRank(absl::Status error) {
  error.SetPayload(kOnEveryRank, absl::Cord("1"));
  return error;
}

bool IsOnEveryRank(const absl::Status& status) { return status.GetPayload(kOnEveryRank).has_value(); }

absl::Status AgreeOnSuccess(Communicator& world, const absl::Status& mine) {
  if (world.size() == 1) return mine;
  int64_t failed = mine.ok() ? 0 : 1;
  absl::Status met = world.AllReduceMax(&failed, 1, "the agreement that every rank is ready");
  if (!met.ok()) return met;  // a rank died: mpirun ends the job
  if (!mine.ok()) return OnEveryRank(mine);
  if (failed > 0)
    return OnEveryRank(absl::AbortedError("stopped: another rank failed before training (its error is printed too)"));
  return absl::OkStatus();
}

int LaunchedWorldSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* value = std::getenv(name);
    int size = 0;
    if (value != nullptr && absl::SimpleAtoi(value, &size) && size > 0) return size;
  }
  return 1;
}

absl::StatusOr<Communicator*> World() {
  static Communicator* world = nullptr;  // never destroyed: MPI outlives main's locals
  if (world != nullptr) return world;
  if (LaunchedWorldSize() <= 1) {
    world = new SingleProcess();
    return world;
  }
  absl::StatusOr<std::unique_ptr<Communicator>> mpi = StartMpi();
  if (!mpi.ok()) return mpi.status();
  world = mpi->release();
  return world;
}

}  // namespace tvlab
