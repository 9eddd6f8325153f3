#ifndef TVLAB_FRAMEWORK_DISTRIBUTED_COMMUNICATOR_H_
#define TVLAB_FRAMEWORK_DISTRIBUTED_COMMUNICATOR_H_

// The processes of one data-parallel run and the collectives training needs.
// Every call is collective: all ranks make the same calls in the same order
// with the same sizes, or they wait for each other forever (MPI's rule).
//
//   SingleProcess  world size 1; every collective is the identity.
//   MPI            (mpi_communicator.cc) when launched by mpirun; built
//                  unless --config=nompi.
//
// Not thread-safe: call from the training thread only.
//
// Hung ranks: MPI waits forever for a rank that stopped without dying
// (SIGSTOP, a deadlock, a swapping node). The MPI communicator therefore
// polls each collective and, when it has not completed `collective timeout`
// seconds after this rank entered it, asks the other ranks where they are,
// prints which rank(s) did not arrive at which collective of which phase
// ("step 15"), and ends the job with MPI_Abort (docs/distributed.md).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tvlab {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // `what` names the collective in the hang watchdog's message ("the
  // gradient all-reduce").
  // In place: values[i] becomes the sum over ranks of values[i].
  virtual absl::Status AllReduceSum(float* values, int64_t n, const char* what) = 0;
  virtual absl::Status AllReduceSum(double* values, int64_t n, const char* what) = 0;
  // In place: values[i] becomes the maximum over ranks.
  virtual absl::Status AllReduceMax(int64_t* values, int64_t n, const char* what) = 0;
  // Every rank's n values, rank by rank, into out[size() * n].
  virtual absl::Status AllGather(const uint64_t* values, int64_t n, uint64_t* out, const char* what) = 0;

  // Ends the run on every rank: for an error that only this rank met while
  // the others may be waiting in a collective. Does not return when size > 1.
  virtual void AbortAll(int exit_code) = 0;

  // The hang watchdog: seconds a collective may wait for the other ranks
  // (> 0; default kDefaultCollectiveTimeout); no effect for one process.
  void SetCollectiveTimeout(double seconds) { timeout_seconds_ = seconds; }
  double collective_timeout() const { return timeout_seconds_; }
  // Where the run stands ("start-up", "step 15"), and what to do after a
  // hang stopped the job (how to resume): for the watchdog's message.
  void SetPhase(std::string phase) { phase_ = std::move(phase); }
  const std::string& phase() const { return phase_; }
  void SetStopHint(std::string hint) { stop_hint_ = std::move(hint); }
  const std::string& stop_hint() const { return stop_hint_; }

  // As PyTorch's default for its process groups: long enough for a slow
  // checkpoint on rank 0 while the others wait, short enough to free a job.
  static constexpr double kDefaultCollectiveTimeout = 600;

 private:
  double timeout_seconds_ = kDefaultCollectiveTimeout;
  std::string phase_ = "start-up";
  std::string stop_hint_;
};

class SingleProcess : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::Status AllReduceSum(float*, int64_t, const char*) override { return absl::OkStatus(); }
  absl::Status AllReduceSum(double*, int64_t, const char*) override { return absl::OkStatus(); }
  absl::Status AllReduceMax(int64_t*, int64_t, const char*) override { return absl::OkStatus(); }
  absl::Status AllGather(const uint64_t* values, int64_t n, uint64_t* out, const char*) override;
  void AbortAll(int) override {}
};

// Collective: `mine` when it is an error; else OK if every rank's was OK,
// else Aborted ("another rank failed"); errors come back OnEveryRank. For steps where one rank may fail
// alone (rank 0's files) before the ranks meet in a collective again.
absl::Status AgreeOnSuccess(Communicator& world, const absl::Status& mine);

// Marks an error every rank returns alike (a failed agreement, different
// replicas, a non-finite global loss): the ranks can end MPI cleanly
// (FinishMpi) instead of MPI_Abort, which kills the others mid-cleanup.
absl::Status OnEveryRank(absl::Status error);
bool IsOnEveryRank(const absl::Status& status);

// The world size mpirun (or another PMI launcher) announced in the
// environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE); 1 when not launched by one.
int LaunchedWorldSize();

// The MPI communicator over MPI_COMM_WORLD (MPI_Init_thread on the first
// call; errors come back as Status, MPI_ERRORS_RETURN). Fails with
// FailedPrecondition, saying how to rebuild, in a --config=nompi build.
absl::StatusOr<std::unique_ptr<Communicator>> StartMpi();

// Ends MPI cleanly (MPI_Finalize) if StartMpi started it; no-op otherwise.
void FinishMpi();

// The communicator of this process: MPI when LaunchedWorldSize() > 1, else a
// SingleProcess. Made once; later calls return the same one.
absl::StatusOr<Communicator*> World();

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DISTRIBUTED_COMMUNICATOR_H_
