// //experiments:run plus one test-only flag, --crash_after_step N: the process
// exits abruptly (_exit(137): no destructors, no final files, as a crash or a
// kill would) right after step N completes, its log row flushed and its
// checkpoint, if one was due, saved. Resume tests kill runs with it.
// Under mpirun, --crash_rank R limits the crash to rank R, and
// --crash_signal 9 makes it a SIGKILL of that process (what the OOM killer
// or `kill -9` does) instead of _exit(137), and --crash_signal 19 makes it
// SIGSTOP: the process stops without dying (a hung rank, for the
// collective-timeout watchdog).

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "experiments/run_main.h"
#include "framework/train/trainer_hooks.h"

ABSL_FLAG(int64_t, crash_after_step, -1,
          "N: test only: exit abruptly (code 137) right after step N completes (-1: never)");
ABSL_FLAG(int32_t, crash_rank, -1, "R: test only: only MPI rank R crashes (-1: every process)");
ABSL_FLAG(int32_t, crash_signal, 0,
          "test only: 9 = raise SIGKILL instead of _exit(137); 19 = raise SIGSTOP (hang, do not die)");

namespace tvlab {
namespace {

class CrashAfterStep : public TrainerHooks {
 public:
  // Reads the flag when called: it is parsed after this hook is made.
  void AfterStep(int64_t step) override {
    if (step != absl::GetFlag(FLAGS_crash_after_step)) return;
    const int rank = absl::GetFlag(FLAGS_crash_rank);
    const char* mine = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank >= 0 && (mine == nullptr || std::atoi(mine) != rank)) return;
    if (absl::GetFlag(FLAGS_crash_signal) == SIGKILL) raise(SIGKILL);
    if (absl::GetFlag(FLAGS_crash_signal) == SIGSTOP) {
      raise(SIGSTOP);
      return;  // continued (SIGCONT): carry on
    }
    _exit(137);
  }
};

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  tvlab::CrashAfterStep hook;
  return tvlab::RunMain(argc, argv, &hook);
}
