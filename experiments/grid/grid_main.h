#ifndef TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_
#define TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_

// The grid command of //experiments:run:
//   bazel run //experiments:run -- GRID.pbtxt [--jobs N] [--output_dir DIR]
//       [--report_only] [--dry_run] [--retry_failed] [--launcher local|slurm]
//       [--slurm_partition P] [--slurm_time T] [--slurm_cpus_per_task K] [--slurm_extra "..."]
// The run binary parses the command line (experiments/run_flags.h) and hands
// it here when the positional argument is a grid spec (LooksLikeGridSpec).
// Exit codes: 0 every run finished (with --launcher slurm: the jobs were
// submitted), 1 some run failed or the grid was interrupted, 2 bad command
// line, bad grid, invalid cells with invalid_cells: STOP, or a submission
// the launcher could not make (nothing was submitted).

#include <string>
#include <vector>

#include "experiments/grid/launcher.h"
#include "framework/io/file_system.h"

namespace tvlab {

struct GridFlags {
  std::string grid_path;   // as typed: relative to the user's directory
  std::string output_dir;  // --output_dir; empty: the grid's own
  int jobs = 1;
  bool report_only = false;
  bool dry_run = false;
  bool retry_failed = false;
  std::string launcher = "local";  // --launcher: a registered launcher (launcher.h)
  SlurmOptions slurm;              // --slurm_*: with --launcher slurm only
  // --run_key KEY: train this one run of the grid (if not finished) and
  // nothing else; no grid lock, no report. What each Slurm array task runs.
  std::string run_key;
};

// True when one of the positional arguments names a readable file holding a
// grid spec.
bool IsGridCommand(const std::vector<std::string>& positional);

// `run_binary` is started once per run (normally /proc/self/exe).
// Every results file is written through `fs`. Exit 1 names each run that
// is not finished (failed, or its metrics.json unreadable) after training.
int GridMain(const GridFlags& flags, const std::string& run_binary,
             FileSystem* fs = DefaultFileSystem());

// The grid command's synopsis (the flags' help texts are absl's).
extern const char kGridUsage[];

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_
