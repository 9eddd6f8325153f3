#ifndef TVLAB_FRAMEWORK_LIMITS_MEMORY_ESTIMATE_H_
#define TVLAB_FRAMEWORK_LIMITS_MEMORY_ESTIMATE_H_

// How much memory a resolved spec needs to train, estimated from its sizes
// alone (nothing is built or allocated), so that a spec that cannot fit is
// refused by validation instead of dying of bad_alloc or the OOM killer.
//
// Everything is float32 and counted in double, so no size overflows:
//   parameters P   embedding V*C, position table max(T, max_seq_len)*C
//                  (counted for every position plugin: an upper bound), per
//                  self-/cross-attention sublayer 4*C*C + 4*C, per FFN
//                  2*C*F + F + C (F = d_ff, or 4*C when 0), two norms per
//                  block, final norms, head (outputs*C + outputs); each
//                  integer option of a plugin (e.g. kv_latent_dim) is taken
//                  as a width w adding 3*C*w per attention sublayer.
//   static         (2 + s) * P: weights, gradients and the optimizer's state,
//                  s floats per parameter (optimizer_state_estimate.h: AdamW
//                  2, Lion and SGD 1, Muon and Adafactor measured).
//   activations    per attention sublayer and micro-batch of B sequences of
//                  length T: 12*B*T*C (projections, outputs, norms, residual,
//                  dropout masks), 3*B*H*T*T (logits, probabilities, dropout
//                  mask), 3*B*T*F (FFN hidden, activation, mask), 4*B*T*w per
//                  plugin width w, and B*H*T*T*w for an attention score
//                  plugin's width (additive attention's hidden); plus the
//                  head's 3*B*T*outputs (logits, softmax, gradient). Training
//                  keeps them on the tape and the backward pass holds about
//                  as many gradients again: x2. Evaluation runs the same
//                  formula once at eval.batch_size.
//   peak           static + max(training activations, evaluation activations).
// Memory tokens (model.memory_tokens, N): N x C parameters per stack, and
// every stack sees T + N rows (the head T). Multi-token prediction
// (model.multi_token_prediction, n): n - 1 more blocks (LAYER heads) or
// heads (LINEAR), and n - 1 more logits (B x T x outputs).
// Per-layer patterns (model.layer_overrides): each plugin width is its
// largest over the layers, and attention counts as unfused when any layer's
// is (an upper bound).
// It is an estimate for refusing the impossible, not a prediction to the
// megabyte: gated FFNs (a third matrix) and allocator slack are not counted.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/interfaces/task.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// One part of the estimate and the spec field that drives it.
struct MemoryPart {
  std::string what;   // "token embedding (V x C)"
  std::string field;  // "model.d_model = 1000000000"
  double bytes = 0;
};

struct MemoryEstimate {
  double parameters = 0;  // elements
  double static_bytes = 0;      // weights, gradients, optimizer state
  double activation_bytes = 0;  // the larger of training and evaluation
  double total_bytes = 0;
  std::vector<MemoryPart> parts;  // sums to total_bytes
};

// Sizes of the task, which the spec does not state directly.
struct TaskSizes {
  int64_t vocab = 0;        // V
  int64_t outputs = 0;      // head width (V, or classes)
  int64_t max_length = 0;   // T
};

// The sizes of a built task.
TaskSizes SizesOf(const Task& task);

// REQUIRES: positive model sizes (the spec passed the rest of validation).
MemoryEstimate EstimateMemory(const Experiment& spec, const TaskSizes& task);

// The memory this process may use: $TVLAB_MEMORY_LIMIT_BYTES when set (for
// tests, or to leave room for other jobs), else the smaller of
// /proc/meminfo's MemAvailable and the cgroup limit, else physical memory.
int64_t AvailableMemoryBytes();

// OK if `spec`'s estimate, with the sizes of its (validated) task, fits in
// `available_bytes`; otherwise ResourceExhausted naming the estimate, the
// part and field that drive it most, and the limit. Returns OK without
// estimating when the model sizes are not positive (validation reports
// those).
absl::Status CheckFitsInMemory(const Experiment& spec, const TaskSizes& task, int64_t available_bytes);

// Every set integer field of `spec`, plugin options (google.protobuf.Any,
// unpacked when the plugin is linked in) included, by field path
// ("model.attention.layout_options.kv_latent_dim").
struct IntegerField {
  std::string path;
  double value = 0;
  bool in_plugin = false;  // inside a plugin's options
  bool score = false;      // inside model.attention.score_options
};
std::vector<IntegerField> IntegerFields(const Experiment& spec);

// "1.5 GiB"
std::string HumanBytes(double bytes);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_LIMITS_MEMORY_ESTIMATE_H_
