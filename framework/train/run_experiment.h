#ifndef TVLAB_FRAMEWORK_TRAIN_RUN_EXPERIMENT_H_
#define TVLAB_FRAMEWORK_TRAIN_RUN_EXPERIMENT_H_

// Trains and evaluates one experiment and fills its run directory: the
// composition of the training loop (train_loop.h), the run directory's files
// (run_directory.h), checkpoints (checkpoint.h) and evaluation (evaluate.h).

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"
#include "framework/train/trainer_hooks.h"

namespace tvlab {

struct RunOptions {
  // Continue from run_dir's latest checkpoint (same spec).
  bool resume = false;
  // Start from these weights (a checkpoint dir, run dir or .safetensors).
  std::string init_from;
  // Skip training: evaluate the weights of init_from.
  bool eval_only = false;
  // Tests only (trainer_hooks.h); production passes none.
  TrainerHooks* hooks = nullptr;
};

// Requires: `spec` came from LoadExperiment (resolved and validated).
// `progress` receives one human-readable line per log interval.
absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const std::string& run_dir,
                                         std::ostream& progress,
                                         const RunOptions& options = {});

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_RUN_EXPERIMENT_H_
