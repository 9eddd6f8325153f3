#ifndef TVLAB_FRAMEWORK_REPORT_COST_MODEL_H_
#define TVLAB_FRAMEWORK_REPORT_COST_MODEL_H_

// What a model costs to train, per token, from its parameter shapes and
// sizes (the accounting of Kaplan et al. 2020, Table 1, and PaLM, App. B):
//
//   train FLOPs/token = 6 * N_dense + sum over attention sublayers l of
//                       3 * mixing_l,   mixing_l = 4 * T_ctx,l * d_attn,l
//                       for softmax attention (12 * L * T_ctx * d_attn when
//                       every layer is alike), or the layer's own
//                       (AttentionLayout::MixingFlopsPerToken) for a mixer
//
// * A mixture of experts counts only the parameters a token uses: its k
//   routed experts of E, the router and shared experts (N_dense excludes
//   CostModelInputs::inactive_parameters), so FLOPs scale with k, not E.
//
// * N_dense: parameters used in a matrix product once per token, counted as
//   every parameter except lookup tables (`embedding.*`, `position.*`: a row
//   gather costs no multiply-adds). Biases and norm gains are included, as
//   in Kaplan's N; they are O(d) per layer. The forward pass costs 2 FLOPs
//   (multiply + add) per dense parameter per token; the backward twice that
//   (gradients for activations and for weights): 6 in all.
// * Attention: per layer and token, Q·K^T and A·V each cost 2 * T_ctx *
//   d_attn FLOPs forward (d_attn = query heads * head_dim; sharing key/value
//   heads as GQA/MQA do does not change it), times 3 for training: 12.
//   T_ctx is the number of keys a query sees: T (the task's sequence
//   length) for bidirectional attention, (T + 1) / 2 on average for causal,
//   fewer inside a window (model.attention.window).
// * Per-layer patterns (model.layer_overrides): each layer is counted with
//   its own resolved spec (LayerExperiment, framework/schema/
//   layer_overrides.h): its layout, width and window, e.g. a hybrid's GLA
//   and softmax layers, or Gemma's local and global windows.
// * Recurrent mixers (kRecurrentMixer: gla, retnet, linear_attention,
//   mamba2, deltanet, gated_deltanet) state their own forward mixing FLOPs,
//   the matrix products of their chunked training form at the layout's
//   chunk_size (framework/attention/mixer_cost.h): per head and chunk of n
//   tokens about 2 n (dk + dv) + 4 dk dv per token (gated linear; more for
//   the delta rule's (n, n) inverse), constant in T; times 3 for training.
//   Their projections are parameters, in 6 * N_dense.
// * Memory tokens (model.memory_tokens, M per stack): M learned vectors
//   before every sequence are computed like tokens but trained on nothing,
//   so a trained token pays for (T + M) / T positions, each seeing M more
//   keys; their table is a lookup (a row copy), not a matmul.
// * Multi-token prediction with LAYER heads (n - 1 extra blocks on the
//   trunk's output, built like the last decoder layer) adds n - 1 attention
//   sublayers, and the shared unembedding runs n times a token
//   (CostModelInputs::reused_parameters); LINEAR heads are their own (V, C)
//   matrices, counted as parameters.
// * An encoder-decoder counts encoder self-, decoder self- and decoder
//   cross-attention sublayers, all as bidirectional over T keys (the
//   family's mask is not causal as a whole); cross-attention has no window.
// Left out: softmax, norms, activations, residual adds, the optimizer step
// (all O(d) per token), and a tied output head (add 6 * V * d if a model
// ties it to the embedding table).
//
// KV-cache bytes per token come from the attention layouts themselves.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// One attention sublayer's token mixing.
struct SublayerMixing {
  int64_t attention_width = 0;  // d_attn = query heads * head_dim
  bool causal = false;
  int64_t window = 0;  // keys each query sees, 0 = all
  // Forward FLOPs per position of a layout that states its own
  // (AttentionLayout::MixingFlopsPerToken at T + M positions); nullopt =
  // softmax attention, 4 * T_ctx * d_attn from the fields above.
  std::optional<double> mixer_flops;
};

struct CostModelInputs {
  std::vector<std::pair<std::string, int64_t>> parameters;  // name, element count
  // Every attention sublayer, each with its own settings; when empty,
  // num_layers softmax sublayers alike, of the four fields below.
  std::vector<SublayerMixing> sublayers;
  int64_t num_layers = 0;  // attention sublayers (an encoder-decoder counts
                           // encoder self + decoder self + decoder cross)
  int64_t seq_len = 0;          // T
  int64_t attention_width = 0;  // d_attn = query heads * head_dim
  bool causal = false;
  int64_t window = 0;  // model.attention.window: keys each query sees, 0 = all
  int64_t kv_cache_bytes_per_token = 0;
  // Dense parameters a token does not use (Module::NumInactiveParameters:
  // a mixture of experts' unchosen experts); left out of N_dense.
  int64_t inactive_parameters = 0;
  // Dense parameters applied more than once a token, counted once per extra
  // use (the unembedding shared by n - 1 MTP layer heads: (n - 1) * V * C).
  int64_t reused_parameters = 0;
  int64_t memory_tokens = 0;  // M: learned positions before each sequence
};

struct CostEstimate {
  int64_t parameters = 0;
  int64_t lookup_parameters = 0;
  int64_t dense_parameters = 0;    // all of them, inactive ones included
  int64_t active_parameters = 0;   // parameters - inactive_parameters
  double dense_flops_per_token = 0;      // 6 * N_dense (active dense parameters only; reused ones again)
  // The sublayers' token mixing, training: 12 * T_ctx * d_attn per softmax
  // sublayer (12 * L * T_ctx * d_attn when alike), 3 * its own per mixer.
  double attention_flops_per_token = 0;
  double train_flops_per_token = 0;      // their sum
  int64_t kv_cache_bytes_per_token = 0;
};

// True for parameters read by index (token and position tables).
bool IsLookupParameter(const std::string& name);

CostEstimate EstimateTrainingCost(const CostModelInputs& inputs);

// Builds the model of a resolved, validated spec for `task` (the task built
// for it; plugins must be linked in) and estimates its cost at float32.
// Allocates the parameters; runs no forward pass.
absl::StatusOr<CostEstimate> CostOfExperiment(const Experiment& resolved, const Task& task);
// The same for a model already built from `resolved` for `task` (a run's).
CostEstimate CostOfModel(const Experiment& resolved, const Task& task, const Model& model);
// The same, building the task first (LoadTask: reads its files); for
// callers that hold no task, such as a grid's results table.
absl::StatusOr<CostEstimate> CostOfExperiment(const Experiment& resolved);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_REPORT_COST_MODEL_H_
