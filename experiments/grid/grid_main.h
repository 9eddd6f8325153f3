#ifndef TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_
#define TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_

// The grid command of //experiments:run:
//   bazel run //experiments:run -- GRID.pbtxt [--output_dir DIR]
//       [--report_only] [--dry_run] [--retry_failed] [--run_key KEY]
//       [--launcher NAME and its flags]  (launcher.h)
// The run binary parses the command line once (experiments/run_flags.h) and
// hands GridMain its grid part when the positional argument is a grid spec.
// Exit codes: 0 every run finished (with --launcher slurm: the jobs were
// submitted), 1 some run failed or the grid was interrupted, 2 bad grid,
// invalid cells with invalid_cells: STOP, or a submission the launcher could
// not make (nothing was submitted).

#include <string>

#include "experiments/grid/launcher.h"
#include "framework/io/file_system.h"

namespace tvlab {

// The grid command's flags, read and checked, with every path resolved.
struct GridFlags {
  std::string grid_path;    // absolute and normalised
  std::string output_dir;   // --output_dir, absolute; empty: the grid's own
  std::string working_dir;  // where the grid's default output directory (runs/<name>) goes
  bool report_only = false;
  bool dry_run = false;
  bool retry_failed = false;
  // --run_key KEY: train this one run of the grid (if not finished) and
  // nothing else; no grid lock, no report. What each Slurm array task runs.
  std::string run_key;
  LauncherFactory launcher;  // --launcher and that launcher's flags
};

// `run_binary` is started once per run (normally /proc/self/exe).
// Every results file is written through `fs`. Exit 1 names each run that
// is not finished (failed, or its metrics.json unreadable) after training.
int GridMain(const GridFlags& flags, const std::string& run_binary, FileSystem* fs = DefaultFileSystem());

// The grid command's synopsis, with every registered launcher (the flags'
// help texts are absl's).
std::string GridUsage();

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_
