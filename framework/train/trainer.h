#ifndef TVLAB_FRAMEWORK_TRAIN_TRAINER_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAINER_H_

// Trains and evaluates one experiment and fills its run directory:
//   spec.resolved.pbtxt  the spec with every default written out
//   train_log.csv        step, loss, lr, grad_norm, tokens_per_sec, elapsed_sec,
//                        eval_loss, eval_token_accuracy (eval columns filled
//                        every train.eval_every steps)
//   metrics.json         RunMetrics (framework/train/metrics.proto)
//   model.safetensors    final weights under their parameter names
//   checkpoints/         every train.checkpoint_every steps and at the end
//                        (framework/train/checkpoint.h)

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

struct RunOptions {
  // Continue from run_dir's latest checkpoint (same spec).
  bool resume = false;
  // Start from these weights (a checkpoint dir, run dir or .safetensors).
  std::string init_from;
  // Skip training: evaluate the weights of init_from.
  bool eval_only = false;
  // Testing only: exit the process abruptly (no cleanup, as a crash or a
  // kill would) right after this step completes.
  int64_t crash_after_step = -1;
};

// Requires: `spec` came from LoadExperiment (resolved and validated).
// `progress` receives one human-readable line per log interval.
absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const std::string& run_dir,
                                         std::ostream& progress,
                                         const RunOptions& options = {});

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAINER_H_
