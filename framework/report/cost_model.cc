#include "framework/report/cost_model.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "framework/core/status_macros.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/model/model_spec.h"

namespace tvlab {

bool IsLookupParameter(const std::string& name) {
  return absl::StartsWith(name, "embedding.") || absl::StartsWith(name, "position.") ||
         absl::StrContains(name, "memory_tokens.");
}

namespace {

// Keys a query sees on average over T queries: (T + 1) / 2 causal, T
// bidirectional; with a window W, causal min(p + 1, W) and bidirectional
// the keys within W - 1 positions of p (attention_mask.h), averaged over p.
double MeanKeysSeen(int64_t t, bool causal, int64_t window) {
  if (window <= 0) return causal ? (t + 1) / 2.0 : static_cast<double>(t);
  double total = 0;
  for (int64_t p = 0; p < t; ++p) {
    const int64_t first = std::max<int64_t>(p - window + 1, 0);
    const int64_t end = causal ? p + 1 : std::min<int64_t>(p + window, t);
    total += static_cast<double>(end - first);
  }
  return t > 0 ? total / static_cast<double>(t) : 0.0;
}

}  // namespace

CostEstimate EstimateTrainingCost(const CostModelInputs& in) {
  CostEstimate c;
  for (const auto& [name, count] : in.parameters) {
    c.parameters += count;
    (IsLookupParameter(name) ? c.lookup_parameters : c.dense_parameters) += count;
  }
  c.active_parameters = c.parameters - in.inactive_parameters;
  // Memory tokens: every position of T + M is computed, per trained token.
  const double positions_per_token =
      in.seq_len > 0 ? static_cast<double>(in.seq_len + in.memory_tokens) / in.seq_len : 1.0;
  const double keys_seen =
      MeanKeysSeen(in.seq_len, in.causal, in.window) + static_cast<double>(in.memory_tokens);
  c.dense_flops_per_token =
      6.0 * positions_per_token *
      static_cast<double>(c.dense_parameters - in.inactive_parameters + in.reused_parameters);
  c.attention_flops_per_token = 12.0 * positions_per_token * static_cast<double>(in.num_layers) *
                                keys_seen * static_cast<double>(in.attention_width);
  c.train_flops_per_token = c.dense_flops_per_token + c.attention_flops_per_token;
  c.kv_cache_bytes_per_token = in.kv_cache_bytes_per_token;
  return c;
}

absl::StatusOr<CostEstimate> CostOfExperiment(const Experiment& resolved) {
  TVLAB_ASSIGN_OR_RETURN(std::shared_ptr<const Task> task, LoadTask(resolved));
  return CostOfExperiment(resolved, *task);
}

absl::StatusOr<CostEstimate> CostOfExperiment(const Experiment& resolved, const Task& task) {
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, BuildModel(resolved, task.vocab_size(), HeadOutputs(task)));
  return CostOfModel(resolved, task, *model);
}

CostEstimate CostOfModel(const Experiment& resolved, const Task& task, const Model& model) {
  const ModelDims dims = ModelDimsFromSpec(resolved.model());
  CostModelInputs in;
  for (const auto& [name, var] : model.NamedParameters()) in.parameters.emplace_back(name, var.value().numel());
  in.num_layers = dims.num_layers;
  if (resolved.model().family() == ModelSpec::ENCODER_DECODER) {
    const int64_t decoder = resolved.model().num_decoder_layers() > 0
                                ? resolved.model().num_decoder_layers()
                                : dims.num_layers;
    in.num_layers += 2 * decoder;  // decoder self- and cross-attention
  }
  in.seq_len = task.max_length();  // what trains, not the (possibly longer) model limit
  in.attention_width = dims.num_heads * dims.head_dim;
  in.causal = dims.causal;
  in.window = resolved.model().attention().window();
  in.kv_cache_bytes_per_token = model.KvCacheBytesPerToken(sizeof(float));
  in.inactive_parameters = model.NumInactiveParameters();
  in.memory_tokens = resolved.model().memory_tokens().count();
  const MultiTokenPredictionSpec& mtp = resolved.model().multi_token_prediction();
  if (mtp.num_tokens() > 1 && mtp.head() == MultiTokenPredictionSpec::LAYER) {
    in.num_layers += mtp.num_tokens() - 1;  // one block per extra head
    for (const auto& [name, count] : in.parameters)
      if (absl::StartsWith(name, "head.")) in.reused_parameters += (mtp.num_tokens() - 1) * count;
  }
  return EstimateTrainingCost(in);
}

}  // namespace tvlab
