#ifndef TVLAB_EXPERIMENTS_HF_HF_IMPORT_H_
#define TVLAB_EXPERIMENTS_HF_HF_IMPORT_H_

// A Hugging Face Llama or GPT-2 directory (config.json + model.safetensors)
// as tvlab weights for a spec of the same shape (--init_from HF_DIR): the
// inverse of experiments/hf/hf_export.h. The result is checked by exporting it
// again: every HF tensor must come back (to 1e-6; the embedding scale is a
// float division and product), and every config.json value the export
// writes (sizes, eps, rope_theta, activation, biases) must equal the HF
// directory's, so a spec that does not match the HF model is an error naming
// the config key, both values, and the spec field to change.

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/schema/experiment.pb.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

// A directory with a config.json: what --init_from treats as an HF model.
bool IsHuggingFaceDirectory(const std::string& path);

// --init_from DIR: OK unless DIR is a directory that is neither a Hugging
// Face directory (config.json) nor a tvlab run or checkpoint directory
// (spec.resolved.pbtxt, state.json or checkpoints/). A directory with only a
// model.safetensors, e.g. an HF download that lost its config.json, would
// otherwise be read as tvlab weights and fail on tensor names.
absl::Status CheckInitFromDirectory(const std::string& path);

absl::StatusOr<std::map<std::string, Tensor>> FromHuggingFace(const ModelSpec& model,
                                                             const std::string& hf_dir);

// FromHuggingFace written as a tvlab safetensors file, which --init_from
// then loads as any other (strictly, by name).
absl::Status WriteImportedWeights(const ModelSpec& model, const std::string& hf_dir,
                                  const std::string& out_file);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_HF_HF_IMPORT_H_
