#ifndef TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_
#define TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_

// The grid command of //experiments:run:
//   bazel run //experiments:run -- GRID.pbtxt [--jobs N] [--output_dir DIR]
//       [--report_only] [--dry_run] [--retry_failed]
// The run binary hands its command line here when an argument is a grid
// spec (LooksLikeGridSpec). Exit codes: 0 every run finished, 1 some run
// failed or the grid was interrupted, 2 bad command line, bad grid or
// invalid cells with invalid_cells: STOP.

#include <string>
#include <vector>

namespace tvlab {

// True when a positional argument names a readable file holding a grid spec.
bool IsGridCommand(const std::vector<std::string>& args);

// `run_binary` is started once per run (normally /proc/self/exe).
int GridMain(const std::vector<std::string>& args, const std::string& run_binary);

extern const char kGridUsage[];

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_GRID_MAIN_H_
