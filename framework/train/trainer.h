#ifndef TVLAB_FRAMEWORK_TRAIN_TRAINER_H_
#define TVLAB_FRAMEWORK_TRAIN_TRAINER_H_

// Trains and evaluates one experiment and fills its run directory:
//   spec.resolved.pbtxt  the spec with every default written out
//   train_log.csv        step, loss, lr, grad_norm, tokens_per_sec, elapsed_sec
//   metrics.json         RunMetrics (framework/train/metrics.proto)
//   model.safetensors    final weights under their parameter names

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "framework/spec/experiment.pb.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

// Requires: `spec` came from LoadExperiment (resolved and validated).
// `progress` receives one human-readable line per log interval.
absl::StatusOr<RunMetrics> RunExperiment(const Experiment& spec, const std::string& run_dir,
                                         std::ostream& progress);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_TRAINER_H_
