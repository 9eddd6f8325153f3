#ifndef TVLAB_FRAMEWORK_MODEL_MODEL_H_
#define TVLAB_FRAMEWORK_MODEL_MODEL_H_

// A Transformer assembled from plugins. BuildModel() is the only place that
// turns a (validated) spec into plugin instances.

#include <memory>

#include "absl/status/statusor.h"
#include "framework/autograd/var.h"
#include "framework/data/task.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/nn/module.h"
#include "framework/spec/experiment.pb.h"

namespace tvlab {

class Model : public Module {
 public:
  // Logits (B, T, V) for the batch's inputs.
  virtual Var Forward(const Batch& batch, const ForwardContext& ctx,
                      const AttentionProbe* probe = nullptr) const = 0;
  // KV-cache bytes per token over all layers at `bytes_per_element`.
  virtual int64_t KvCacheBytesPerToken(int64_t bytes_per_element) const = 0;
};

// Requires: `spec` passed ValidateExperiment. Parameters are initialised
// from spec.seed().
absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Experiment& spec, int64_t vocab_size);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_MODEL_H_
