// Communicator over MPI_COMM_WORLD (Open MPI from Debian; docs/distributed.md).
//
// Every collective is started non-blocking (MPI_Iallreduce, MPI_Iallgather)
// and polled, so that a rank that never arrives (stopped, deadlocked) is
// noticed: after the collective timeout the waiting rank asks every other
// rank which collective it is in (a point-to-point query that waiting ranks
// answer from their polling loop), names the ranks that did not answer or
// are elsewhere, and ends the job with MPI_Abort.

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/distributed/communicator.h"

namespace tvlab {
namespace {

using Clock = std::chrono::steady_clock;

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

// Point-to-point tags of the watchdog's "where are you?" exchange (never
// used by anything else; collectives do not match point-to-point messages).
constexpr int kQueryTag = 7301;
constexpr int kAnswerTag = 7302;

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) { PostQueryReceive(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  absl::Status AllReduceSum(float* values, int64_t n, const char* what) override {
    return InPlace(values, n, MPI_FLOAT, MPI_SUM, what);
  }
  absl::Status AllReduceSum(double* values, int64_t n, const char* what) override {
    return InPlace(values, n, MPI_DOUBLE, MPI_SUM, what);
  }
  absl::Status AllReduceMax(int64_t* values, int64_t n, const char* what) override {
    return InPlace(values, n, MPI_INT64_T, MPI_MAX, what);
  }
  absl::Status AllGather(const uint64_t* values, int64_t n, uint64_t* out, const char* what) override {
    MPI_Request request;
    const int code = MPI_Iallgather(values, static_cast<int>(n), MPI_UINT64_T, out, static_cast<int>(n),
                                    MPI_UINT64_T, MPI_COMM_WORLD, &request);
    if (code != MPI_SUCCESS) return MpiStatus(code, "MPI_Iallgather");
    return Await(&request, "MPI_Iallgather", what);
  }
  void AbortAll(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

  // Before MPI_Finalize: no receive may be left pending.
  void CancelQueryReceive() {
    if (query_request_ == MPI_REQUEST_NULL) return;
    MPI_Cancel(&query_request_);
    MPI_Wait(&query_request_, MPI_STATUS_IGNORE);
  }

 private:
  template <typename T>
  absl::Status InPlace(T* values, int64_t n, MPI_Datatype type, MPI_Op op, const char* what) {
    for (int64_t done = 0; done < n; done += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, n - done));
      MPI_Request request;
      const int code = MPI_Iallreduce(MPI_IN_PLACE, values + done, count, type, op, MPI_COMM_WORLD, &request);
      if (code != MPI_SUCCESS) return MpiStatus(code, "MPI_Iallreduce");
      absl::Status status = Await(&request, "MPI_Iallreduce", what);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // Polls `request` to completion, answering other ranks' queries meanwhile;
  // past the timeout, ends the job (HungRanks). Spins for the first
  // millisecond (a collective usually completes in microseconds), then
  // sleeps 50 us between polls so a waiting rank leaves the CPU to the rank
  // it waits for (ranks often share cores).
  absl::Status Await(MPI_Request* request, const char* call, const char* what) {
    ++sequence_;  // the same number on every rank for the same collective
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(collective_timeout()));
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      const int code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) return MpiStatus(code, call);
      if (done) return absl::OkStatus();
      AnswerQueries();
      if (polls < 1000) continue;
      const auto now = Clock::now();
      if (now >= deadline) HungRanks(what, now - start);  // does not return
      if (now - start > std::chrono::milliseconds(1))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void PostQueryReceive() {
    MPI_Irecv(&query_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, MPI_COMM_WORLD, &query_request_);
  }

  // A rank that timed out asks where this one is: the answer is the number
  // of the collective this rank is waiting in.
  void AnswerQueries() {
    for (;;) {
      int arrived = 0;
      MPI_Status status;
      if (MPI_Test(&query_request_, &arrived, &status) != MPI_SUCCESS || !arrived) return;
      answers_.push_back(sequence_);  // the buffer lives until the process ends
      MPI_Request sent;
      MPI_Isend(&answers_.back(), 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, MPI_COMM_WORLD, &sent);
      MPI_Request_free(&sent);
      PostQueryReceive();
    }
  }

  // The collective numbered `sequence_` (named `what`) did not complete in
  // time: asks every other rank where it is for a grace period, prints who
  // did not arrive, and ends the job.
  [[noreturn]] void HungRanks(const char* what, Clock::duration waited) {
    std::vector<int64_t> where(size_, -1);  // -1: no answer
    std::vector<MPI_Request> replies;
    std::vector<int> from;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request sent;
      MPI_Isend(&sequence_, 1, MPI_INT64_T, r, kQueryTag, MPI_COMM_WORLD, &sent);
      MPI_Request_free(&sent);
      replies.emplace_back();
      from.push_back(r);
    }
    for (size_t i = 0; i < replies.size(); ++i)
      MPI_Irecv(&where[from[i]], 1, MPI_INT64_T, from[i], kAnswerTag, MPI_COMM_WORLD, &replies[i]);
    // Ranks waiting in a collective answer within milliseconds; the grace
    // period only bounds the wait for those that do not.
    const double grace = std::min(5.0, std::max(1.0, collective_timeout() / 4));
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(grace));
    while (Clock::now() < until) {
      int all = 0;
      MPI_Testall(static_cast<int>(replies.size()), replies.data(), &all, MPI_STATUSES_IGNORE);  // host: MPI requests
      if (all) break;
      AnswerQueries();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::vector<int> missing, elsewhere;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || where[r] == sequence_) continue;
      (where[r] < 0 ? missing : elsewhere).push_back(r);
    }
    std::string who;
    if (!missing.empty())
      who = absl::StrCat("rank(s) ", absl::StrJoin(missing, ", "), " did not arrive (no answer within ",
                         absl::StrFormat("%.0f", grace), " s: stopped, hung or deadlocked)");
    if (!elsewhere.empty()) {
      std::vector<std::string> at;
      for (int r : elsewhere) at.push_back(absl::StrCat(r, " (in collective #", where[r], ")"));
      absl::StrAppend(&who, who.empty() ? "" : "; ", "rank(s) ", absl::StrJoin(at, ", "),
                      " are in another collective (the ranks' code paths diverged)");
    }
    if (who.empty()) who = "every rank arrived only after the timeout (a rank is slower than --collective_timeout)";
    const double seconds = std::chrono::duration<double>(waited).count();
    // One write: ranks share the terminal.
    std::cerr << absl::StrFormat(
                     "[rank %d/%d] error: %s (collective #%d) of %s did not complete within "
                     "--collective_timeout %g s (waited %.1f s): %s. Ending the job with MPI_Abort. %s\n",
                     rank_, size_, what, sequence_, phase(), collective_timeout(), seconds, who, stop_hint())
              << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);  // MPI_Abort does not return; if it did, this process still ends
  }

  int rank_, size_;
  int64_t sequence_ = 0;  // collectives entered so far
  int64_t query_ = 0;
  MPI_Request query_request_ = MPI_REQUEST_NULL;
  std::deque<int64_t> answers_;  // send buffers of answers (deque: stable addresses)
};

MpiCommunicator* started = nullptr;  // owned by World()

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> StartMpi() {
  int provided = 0;
  // Only the training thread calls MPI (OpenMP threads never do).
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return absl::UnavailableError("MPI_Init_thread failed: was this process started by mpirun?");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  started = new MpiCommunicator(rank, size);
  return std::unique_ptr<Communicator>(started);
}

void FinishMpi() {
  if (started == nullptr) return;
  started->CancelQueryReceive();
  MPI_Finalize();
  started = nullptr;
}

}  // namespace tvlab
