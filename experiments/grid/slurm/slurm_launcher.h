#ifndef TVLAB_EXPERIMENTS_GRID_SLURM_SLURM_LAUNCHER_H_
#define TVLAB_EXPERIMENTS_GRID_SLURM_SLURM_LAUNCHER_H_

// --launcher slurm: the runs still to run go to a Slurm cluster as one job
// array, a task per run, and a dependent job (afterany) rebuilds the results
// with --report_only once every task has ended. Into <output_dir>/slurm/ it
// writes:
//   cells.txt      task index, run key, cell and seed, one line per task
//   grid.sbatch    the batch script: `grid.sbatch cell` (array task i trains
//                  the i-th key with `run GRID --run_key KEY`), `grid.sbatch
//                  report` (`run GRID --report_only`)
//   jobs.txt       one line per submission: array and report job ids
//   logs/          Slurm's output files: <array>_<task>.out, report_<job>.out
// Each task runs the run exactly as the local launcher does (grid_runner.h),
// so a run that fails on the cluster leaves the same failed.txt and run.log.
// The array is submitted held and released only after the report job was
// accepted: a refused submission leaves nothing queued and nothing run.
// Errors (nothing submitted): no sbatch on PATH, sbatch refusing the job
// (its message, with the flag it is about), a job the cluster can never
// start (e.g. more CPUs per task than any node of the partition has).
//
// Its flags (--slurm_partition, --slurm_time, --slurm_cpus_per_task,
// --slurm_extra) and its registration are in slurm_flags.cc.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "experiments/grid/launcher.h"
#include "experiments/grid/slurm/external_command.h"

namespace tvlab {

// --slurm_* flags (docs/grids.md, "On a Slurm cluster").
struct SlurmOptions {
  std::string partition;           // --slurm_partition; empty: the cluster's default
  std::string time;                // --slurm_time, per array task; empty: the partition's default
  int cpus_per_task = 0;           // --slurm_cpus_per_task; 0: the runs' largest runtime.threads
  std::vector<std::string> extra;  // --slurm_extra, split at spaces: more sbatch options
  // --slurm_command_timeout: how long sbatch, squeue, scontrol or scancel
  // may take before it is killed and the grid stops with an error.
  absl::Duration command_timeout = kExternalCommandTimeout;
};

// REQUIRES: CheckSlurmOptions(options) is OK.
std::unique_ptr<Launcher> NewSlurmLauncher(const SlurmOptions& options, const LauncherContext& context);

// InvalidArgument naming the flag: a negative --slurm_cpus_per_task, or a
// --slurm_time that is not one of Slurm's forms (ValidateSlurmTime).
absl::Status CheckSlurmOptions(const SlurmOptions& options);

// Slurm's --time forms: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS,
// UNLIMITED. InvalidArgument naming --slurm_time and the forms otherwise.
absl::Status ValidateSlurmTime(const std::string& time);

// FailedPrecondition when the last Slurm submission recorded in
// <output_dir>/slurm/jobs.txt is still queued or running (squeue): its tasks
// would train the same runs as a new invocation, with any launcher. OK when
// there is none, squeue no longer knows it, or there is no squeue.
absl::Status CheckNoSlurmJobsQueued(const std::string& output_dir);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_SLURM_SLURM_LAUNCHER_H_
