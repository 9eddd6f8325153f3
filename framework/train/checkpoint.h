#ifndef TVLAB_FRAMEWORK_TRAIN_CHECKPOINT_H_
#define TVLAB_FRAMEWORK_TRAIN_CHECKPOINT_H_

// Checkpoints under <run_dir>/checkpoints/step_<N>/:
//   model.safetensors      weights under their parameter names
//   optimizer.safetensors  the optimizer plugin's state (Optimizer::StateTensors:
//                          AdamW's "<param>.exp_avg", ".exp_avg_sq")
//   state.json             TrainState (step, loss, counters)
//   spec.resolved.pbtxt    the run's spec (randomness is keyed by it, so it
//                          is the whole RNG state)
// A checkpoint is written into a temporary directory that is renamed into
// place only when complete, then <run_dir>/checkpoints/latest (a one-line
// file naming it) is replaced atomically: a crash mid-write never leaves a
// checkpoint that looks valid but is not.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/autograd/var.h"
#include "framework/io/file_system.h"
#include "framework/interfaces/optimizer.h"
#include "framework/train/checkpoint.pb.h"

namespace tvlab {

using NamedVars = std::vector<std::pair<std::string, Var>>;

// Every file goes through the atomic writer; on any failure (a full disk
// included) the previous checkpoint and `latest` are untouched.
absl::Status SaveCheckpoint(const std::string& run_dir, const TrainState& state,
                            const NamedVars& params, const Optimizer& optimizer,
                            const std::string& spec_text, FileSystem* fs = DefaultFileSystem());

// The directory of the latest complete checkpoint, or NotFound.
absl::StatusOr<std::string> LatestCheckpoint(const std::string& run_dir);

// The training state (state.json) of `checkpoint_dir` alone.
absl::StatusOr<TrainState> ReadTrainState(const std::string& checkpoint_dir);

// Restores weights, the optimizer's state and steps, and the training state
// from `checkpoint_dir`.
absl::StatusOr<TrainState> LoadCheckpoint(const std::string& checkpoint_dir,
                                          const NamedVars& params, Optimizer* optimizer);

// Loads only the weights (for --init_from and evaluation): `path` is a
// checkpoint directory, a run directory (its latest checkpoint) or a
// .safetensors file.
absl::Status LoadWeights(const std::string& path, const NamedVars& params);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_CHECKPOINT_H_
