// //experiments:run plus one test-only flag, --crash_after_step N: the process
// exits abruptly (_exit(137): no destructors, no final files, as a crash or a
// kill would) right after step N completes, its log row flushed and its
// checkpoint, if one was due, saved. Resume tests kill runs with it.

#include <unistd.h>

#include <cstdint>

#include "absl/flags/flag.h"
#include "experiments/run_main.h"
#include "framework/train/trainer_hooks.h"

ABSL_FLAG(int64_t, crash_after_step, -1,
          "N: test only: exit abruptly (code 137) right after step N completes (-1: never)");

namespace tvlab {
namespace {

class CrashAfterStep : public TrainerHooks {
 public:
  // Reads the flag when called: it is parsed after this hook is made.
  void AfterStep(int64_t step) override {
    if (step == absl::GetFlag(FLAGS_crash_after_step)) _exit(137);
  }
};

}  // namespace
}  // namespace tvlab

int main(int argc, char** argv) {
  tvlab::CrashAfterStep hook;
  return tvlab::RunMain(argc, argv, &hook);
}
