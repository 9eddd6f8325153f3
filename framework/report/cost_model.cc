#include "framework/report/cost_model.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "framework/core/check.h"
#include "framework/core/status_macros.h"
#include "framework/data/load_task.h"
#include "framework/interfaces/attention_layout.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/model.h"
#include "framework/model/model_spec.h"
#include "framework/schema/layer_overrides.h"

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

// The training FLOPs per trained token of the sublayers' mixing. Softmax
// sublayers alike (width, causal, window) are one group, counted as
// 12 * positions * count * keys_seen * width in that order (the formula of
// a model without per-layer patterns, so its numbers stay bit-identical);
// a mixer adds 3 * positions * its forward FLOPs per position.
double MixingFlopsPerTrainedToken(const CostModelInputs& in, double positions_per_token) {
  std::vector<SublayerMixing> sublayers = in.sublayers;
  if (sublayers.empty()) {
    SublayerMixing alike;
    alike.attention_width = in.attention_width;
    alike.causal = in.causal;
    alike.window = in.window;
    sublayers.assign(static_cast<size_t>(std::max<int64_t>(in.num_layers, 0)), alike);
  }
  std::vector<std::pair<SublayerMixing, int64_t>> groups;  // softmax settings, sublayers
  double mixers = 0;
  for (const SublayerMixing& s : sublayers) {
    if (s.mixer_flops.has_value()) {
      mixers += 3.0 * positions_per_token * *s.mixer_flops;
      continue;
    }
    auto same = [&](const auto& g) {
      return g.first.attention_width == s.attention_width && g.first.causal == s.causal &&
             g.first.window == s.window;
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) groups.emplace_back(s, 1);
    else ++it->second;
  }
  double total = 0;
  for (const auto& [s, count] : groups) {
    const double keys_seen =
        MeanKeysSeen(in.seq_len, s.causal, s.window) + static_cast<double>(in.memory_tokens);
    total += 12.0 * positions_per_token * static_cast<double>(count) * keys_seen *
             static_cast<double>(s.attention_width);
  }
  return total + mixers;
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
  c.dense_flops_per_token =
      6.0 * positions_per_token *
      static_cast<double>(c.dense_parameters - in.inactive_parameters + in.reused_parameters);
  c.attention_flops_per_token = MixingFlopsPerTrainedToken(in, positions_per_token);
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

namespace {

// The self-attention sublayer of layer `layer_spec` (LayerExperiment):
// its width, window, and the mixing FLOPs its layout states (the layout is
// built once per distinct attention spec in `layouts`).
SublayerMixing SelfAttentionOf(const Experiment& layer_spec, bool causal, int64_t positions,
                               std::map<std::string, std::optional<double>>* layouts) {
  const ModelDims dims = ModelDimsFromSpec(layer_spec.model());
  SublayerMixing s;
  s.attention_width = dims.num_heads * dims.head_dim;
  s.causal = causal;
  s.window = layer_spec.model().attention().window();
  const std::string key = layer_spec.model().attention().SerializeAsString();
  auto it = layouts->find(key);
  if (it == layouts->end()) {
    // The spec built the model, so its layout resolves.
    const PluginKind& kind = PluginKindById("attention_layout");
    absl::StatusOr<std::unique_ptr<google::protobuf::Message>> options = UnpackPluginOptions(layer_spec, kind);
    TVLAB_CHECK(options.ok()) << options.status();
    absl::StatusOr<const AttentionLayoutEntry*> entry =
        AttentionLayoutRegistry().Get(PluginNameIn(layer_spec, kind));
    TVLAB_CHECK(entry.ok()) << entry.status();
    std::unique_ptr<AttentionLayout> layout = (*entry)->create(**options, dims);
    it = layouts->emplace(key, layout->MixingFlopsPerToken(positions)).first;
  }
  s.mixer_flops = it->second;
  return s;
}

// Every attention sublayer of the model, each from its layer's resolved
// spec: encoder then decoder layers (self-attention; an encoder-decoder's
// decoder layers add cross-attention, softmax without a window), then
// multi-token prediction's LAYER heads (blocks like the last decoder layer).
std::vector<SublayerMixing> SublayersOf(const Experiment& resolved, bool causal, int64_t positions) {
  const ModelSpec& m = resolved.model();
  std::map<std::string, std::optional<double>> layouts;
  std::vector<SublayerMixing> self, cross;
  Experiment last;
  for (StackRole stack : StacksOf(m)) {
    for (int64_t layer = 0; layer < LayersOf(m, stack); ++layer) {
      last = LayerExperiment(resolved, stack, layer);
      self.push_back(SelfAttentionOf(last, causal, positions, &layouts));
      if (m.family() != ModelSpec::ENCODER_DECODER || stack != StackRole::kDecoder) continue;
      SublayerMixing c = self.back();
      c.window = 0;
      c.mixer_flops.reset();
      cross.push_back(c);
    }
  }
  const MultiTokenPredictionSpec& mtp = m.multi_token_prediction();
  if (mtp.num_tokens() > 1 && mtp.head() == MultiTokenPredictionSpec::LAYER && !self.empty())
    for (int64_t k = 2; k <= mtp.num_tokens(); ++k) self.push_back(SelfAttentionOf(last, causal, positions, &layouts));
  self.insert(self.end(), cross.begin(), cross.end());
  return self;
}

}  // namespace

CostEstimate CostOfModel(const Experiment& resolved, const Task& task, const Model& model) {
  const ModelDims dims = ModelDimsFromSpec(resolved.model());
  CostModelInputs in;
  for (const auto& [name, var] : model.NamedParameters()) in.parameters.emplace_back(name, var.value().numel());
  in.seq_len = task.max_length();  // what trains, not the (possibly longer) model limit
  in.memory_tokens = resolved.model().memory_tokens().count();
  in.sublayers = SublayersOf(resolved, dims.causal, in.seq_len + in.memory_tokens);
  in.num_layers = static_cast<int64_t>(in.sublayers.size());
  in.attention_width = dims.num_heads * dims.head_dim;
  in.causal = dims.causal;
  in.window = resolved.model().attention().window();
  in.kv_cache_bytes_per_token = model.KvCacheBytesPerToken(sizeof(float));
  in.inactive_parameters = model.NumInactiveParameters();
  const MultiTokenPredictionSpec& mtp = resolved.model().multi_token_prediction();
  if (mtp.num_tokens() > 1 && mtp.head() == MultiTokenPredictionSpec::LAYER) {
    for (const auto& [name, count] : in.parameters)
      if (absl::StartsWith(name, "head.")) in.reused_parameters += (mtp.num_tokens() - 1) * count;
  }
  return EstimateTrainingCost(in);
}

}  // namespace tvlab
