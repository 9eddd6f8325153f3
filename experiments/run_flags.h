#ifndef TVLAB_EXPERIMENTS_RUN_FLAGS_H_
#define TVLAB_EXPERIMENTS_RUN_FLAGS_H_

// The command line of //experiments:run, parsed once into one value: which
// command it is (train or resume one spec, a grid, --list_plugins, --help),
// every flag read and checked (which flags go together, what is required,
// a launcher's own flags by its registry: experiments/grid/launcher.h), and
// every path resolved against the directory the user ran `bazel run` from.
// The flags themselves are ABSL_FLAGs in run_flags.cc and beside each grid
// launcher. Every error returned here is a usage error (exit code 2).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/grid/grid_main.h"

namespace tvlab {

// One spec trained (or resumed) into its run directory.
struct TrainFlags {
  std::string spec_path;               // resolved; empty with --resume
  std::vector<std::string> overrides;  // --set a.b=c, in order
  std::string output_dir;              // resolved; empty: <runs_root>/<name>/<timestamp>
  std::string runs_root;               // runs/ in the user's directory
  std::string resume_dir;              // --resume RUN_DIR, resolved
  std::string init_from;               // --init_from PATH, resolved
  bool eval_only = false;
  // Under mpirun: seconds a collective waits for the other ranks before the
  // job is stopped as hung (docs/distributed.md).
  double collective_timeout = 600;
};

struct RunFlags {
  enum class Command { kHelp, kListPlugins, kTrain, kGrid };
  Command command = Command::kTrain;
  TrainFlags train;  // kTrain
  GridFlags grid;    // kGrid
};

// Parses argv (absl flags: every flag linked into the binary is set). On an
// error, `usage` is the synopsis to print with it: the grid command's once
// the positional argument is a grid spec, else the run binary's.
absl::StatusOr<RunFlags> ParseRunFlags(int argc, char** argv, std::string* usage);

// The run binary's synopsis, with every registered grid launcher; --help
// adds every flag with its help text.
std::string RunUsage();

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_RUN_FLAGS_H_
