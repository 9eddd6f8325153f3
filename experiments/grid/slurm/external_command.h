#ifndef TVLAB_EXPERIMENTS_GRID_SLURM_EXTERNAL_COMMAND_H_
#define TVLAB_EXPERIMENTS_GRID_SLURM_EXTERNAL_COMMAND_H_

// Runs a short external command (sbatch, squeue, scontrol, scancel) and
// collects what it printed. For commands that answer in seconds and print
// little; the run processes of a grid go through grid_runner.h instead.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tvlab {

struct CommandResult {
  int exit_code = -1;  // the exit status; 128 + N when killed by signal N
  std::string out;     // stdout
  std::string err;     // stderr
};

// The absolute path of `program` found on $PATH as execvp would, or "" when
// no directory of $PATH holds an executable of that name.
std::string FindOnPath(const std::string& program);

// How long a Slurm command may take by default (--slurm_command_timeout):
// sbatch, squeue and scontrol answer in seconds unless the controller is stuck.
inline constexpr absl::Duration kExternalCommandTimeout = absl::Seconds(60);

// Runs argv[0] (an absolute path) with argv, stdin from /dev/null, in its own
// process group. An error when the process could not be started, or
// DeadlineExceeded when it did not end within `timeout` (it and its children
// are then killed); a non-zero exit is a result.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout = kExternalCommandTimeout);

// "a b 'c d'": argv as a shell would need it typed, for messages and logs.
std::string ShellQuoted(const std::vector<std::string>& argv);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_SLURM_EXTERNAL_COMMAND_H_
