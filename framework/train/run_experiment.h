#ifndef TVLAB_FRAMEWORK_TRAIN_RUN_EXPERIMENT_H_
#define TVLAB_FRAMEWORK_TRAIN_RUN_EXPERIMENT_H_

// Trains and evaluates one experiment and fills its run directory: the
// composition of the training loop (train_loop.h), the run directory's files
// (run_directory.h), checkpoints (checkpoint.h) and evaluation (evaluate.h).

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "framework/distributed/communicator.h"
#include "framework/interfaces/task.h"
#include "framework/io/file_system.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/trainer_hooks.h"

namespace tvlab {

class Model;

struct RunOptions {
  // Continue from run_dir's latest checkpoint (same spec).
  bool resume = false;
  // Start from these weights (a checkpoint dir, run dir or .safetensors).
  std::string init_from;
  // Skip training: evaluate the weights of init_from.
  bool eval_only = false;
  // Tests only (trainer_hooks.h); production passes none.
  TrainerHooks* hooks = nullptr;
  // Where every file of the run is written; null: DefaultFileSystem().
  // Tests pass a fault-injecting one (framework/io/testing/).
  FileSystem* file_system = nullptr;
  // The ranks of a data-parallel run (docs/distributed.md); null: one
  // process. Rank 0 alone writes run_dir; the others read it only to
  // --resume (the checkpoint), train on their shards and evaluate alike.
  Communicator* world = nullptr;
  // The model's training FLOPs per token (experiments/run passes the cost
  // model's, framework/report/cost_model.h CostOfModel). Set: the run
  // reports achieved FLOP/s and MFU against its device's peak
  // (framework/perf/peak.h) in metrics.json and the progress line; unset:
  // neither, and no peak is looked up or measured.
  std::function<double(const Model&)> train_flops_per_token;
};

// Requires: `spec` came from LoadExperiment (resolved and validated) and
// `task` is the task that validation built for it (LoadExperiment hands it
// out): the run reads no task file again. The run's runtime (backend,
// attention policy, precision, threads) is applied first (ApplyRuntime,
// framework/runtime/apply_runtime.h).
// `progress` receives one human-readable line per log interval.
// The model is built and the weights of --init_from (or the checkpoint of
// --resume) loaded before the run directory is created or changed, so a bad
// flag leaves nothing behind. The run holds <run_dir>/.run.lock
// (framework/io/dir_lock.h) until it returns: a second run into the same
// directory is refused with the holder's pid. metrics.json is written last;
// the run counts as finished only once it is complete. With a world of N > 1
// ranks, every rank calls this with the same arguments; before the first
// step the ranks prove they hold the same program, spec and parameters
// (framework/distributed/replica_check.h).
absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const Task& task, const std::string& run_dir,
                                         std::ostream& progress, const RunOptions& options = {});

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_RUN_EXPERIMENT_H_
