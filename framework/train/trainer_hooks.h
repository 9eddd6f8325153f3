#ifndef TVLAB_FRAMEWORK_TRAIN_TRAINER_HOOKS_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAINER_HOOKS_H_

// A seam for tests: the training loop calls these at fixed points so a test
// binary can observe the run or interrupt it (tests/run_with_crash_hook.cc
// exits the process after a given step, as a kill would). Production code
// passes none.

#include <cstdint>

namespace tvlab {

class TrainerHooks {
 public:
  virtual ~TrainerHooks() = default;
  // Called when `step` is complete: its log row is written and flushed and,
  // when one was due, its checkpoint saved.
  virtual void AfterStep(int64_t step) = 0;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAINER_HOOKS_H_
