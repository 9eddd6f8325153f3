#ifndef TVLAB_EXPERIMENTS_RUN_FLAGS_H_
#define TVLAB_EXPERIMENTS_RUN_FLAGS_H_

// The flags of //experiments:run (ABSL_FLAG in run_flags.cc), for a single
// run and for a grid, and their checks: which flags go together, what is
// required. Exit code 2 for every error returned here.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/cli/command_line.h"
#include "experiments/grid/grid_main.h"

namespace tvlab {

struct RunFlags {
  std::string spec_path;
  std::vector<std::string> overrides;  // --set a.b=c, in order
  std::string output_dir;
  std::string resume_dir;  // --resume RUN_DIR
  std::string init_from;   // --init_from PATH
  bool eval_only = false;
  bool list_plugins = false;
  // Under mpirun: seconds a collective waits for the other ranks before the
  // job is stopped as hung (docs/distributed.md).
  double collective_timeout = 600;
};

// REQUIRES: `line` came from ParseFlags (the absl flags are set).
absl::StatusOr<RunFlags> RunFlagsFrom(const CommandLine& line);
absl::StatusOr<GridFlags> GridFlagsFrom(const CommandLine& line);

// The synopsis; --help adds every flag with its help text.
extern const char kRunUsage[];

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_RUN_FLAGS_H_
