// Communicator over MPI_COMM_WORLD (Open MPI from Debian; docs/distributed.md).

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "framework/distributed/communicator.h"

namespace tvlab {
namespace {

absl::Status MpiStatus(int code, const char* call) {
  if (code == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::UnavailableError(absl::StrCat(call, " failed: ", std::string(text, length),
                                             " (another rank may have died; see mpirun's message)"));
}

// MPI counts are int: collectives over more elements go in pieces.
constexpr int64_t kMaxCount = int64_t{1} << 30;

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  absl::Status AllReduceSum(float* values, int64_t n) override {
    return InPlace(values, n, MPI_FLOAT, MPI_SUM);
  }
  absl::Status AllReduceSum(double* values, int64_t n) override {
    return InPlace(values, n, MPI_DOUBLE, MPI_SUM);
  }
  absl::Status AllReduceMax(int64_t* values, int64_t n) override {
    return InPlace(values, n, MPI_INT64_T, MPI_MAX);
  }
  absl::Status AllGather(const uint64_t* values, int64_t n, uint64_t* out) override {
    return MpiStatus(MPI_Allgather(values, static_cast<int>(n), MPI_UINT64_T, out, static_cast<int>(n),
                                   MPI_UINT64_T, MPI_COMM_WORLD),
                     "MPI_Allgather");
  }
  void AbortAll(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

 private:
  template <typename T>
  absl::Status InPlace(T* values, int64_t n, MPI_Datatype type, MPI_Op op) {
    for (int64_t done = 0; done < n; done += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, n - done));
      absl::Status status =
          MpiStatus(MPI_Allreduce(MPI_IN_PLACE, values + done, count, type, op, MPI_COMM_WORLD), "MPI_Allreduce");
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  int rank_, size_;
};

bool started = false;

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> StartMpi() {
  int provided = 0;
  // Only the training thread calls MPI (OpenMP threads never do).
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return absl::UnavailableError("MPI_Init_thread failed: was this process started by mpirun?");
  started = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<Communicator>(new MpiCommunicator(rank, size));
}

void FinishMpi() {
  if (started) MPI_Finalize();
  started = false;
}

}  // namespace tvlab
