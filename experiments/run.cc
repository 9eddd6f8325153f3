// bazel run //experiments:run -- spec.pbtxt [--set a.b=c]... [--output_dir DIR]
// bazel run //experiments:run -- --resume RUN_DIR
// bazel run //experiments:run -- GRID.pbtxt [--jobs N] ...  (a grid: docs/grids.md)
// bazel run //experiments:run -- --help  (every flag)
//
// Validates the whole spec, trains, evaluates and leaves a run directory.
// Exit codes: 0 success, 2 bad command line or spec, 1 failure while running.

#include "experiments/run_main.h"

int main(int argc, char** argv) { return tvlab::RunMain(argc, argv, /*hooks=*/nullptr); }
