#ifndef TVLAB_EXPERIMENTS_RUN_MAIN_H_
#define TVLAB_EXPERIMENTS_RUN_MAIN_H_

// The body of //experiments:run: parses the command line once (run_flags.h),
// then trains one spec (or resumes a run) or hands a grid spec to GridMain.
// Exit codes: 0 success, 2 bad command line or spec, 1 failure while running.
//
// `hooks` is the trainer's test seam (framework/train/trainer_hooks.h):
// //experiments:run passes nullptr; test binaries built from this same code
// (//tests:run_with_crash_hook) pass theirs. `fs` is where every file is
// written (null: DefaultFileSystem()); //tests:run_with_faults passes a
// fault-injecting one.

#include "framework/io/file_system.h"
#include "framework/train/trainer_hooks.h"

namespace tvlab {

int RunMain(int argc, char** argv, TrainerHooks* hooks, FileSystem* fs = nullptr);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_RUN_MAIN_H_
