#include "framework/train/run_metrics.h"

#include <algorithm>
#include <cmath>

#include <sys/resource.h>

#include "framework/attention/attend.h"
#include "framework/core/status_macros.h"
#include "framework/data/eval_train_overlap.h"
#include "framework/tensor/device_memory.h"
#include "framework/train/context_evals.h"
#include "framework/train/decode_speed.h"
#include "framework/train/evaluate.h"
#include "framework/train/speculative_eval.h"

namespace tvlab {
namespace {

// The auxiliary outputs' means (absent where never emitted).
void RecordAuxiliaryOutputs(const TrainLoopResult& trained, RunMetrics* metrics) {
  for (size_t i = 0; i < trained.auxiliary_run.size(); ++i) {
    const AuxiliaryDeclaration& d = trained.auxiliary_run[i].declaration;
    RunMetrics::AuxiliaryOutput* out = metrics->add_auxiliary_outputs();
    out->set_name(d.name);
    out->set_kind(d.is_loss ? "loss" : "statistic");
    if (d.is_loss) out->set_coefficient(d.coefficient);
    const double last = trained.auxiliary_last_interval[i].value, run = trained.auxiliary_run[i].value;
    if (!std::isnan(last)) out->set_last_interval_mean(last);
    if (!std::isnan(run)) out->set_run_mean(run);
  }
}

// What every run records about its cost and runtime, diverged or not. The
// peak memory is read now: after everything the run allocated.
void RecordCost(const RuntimeSpec& runtime, const Model& model, const TrainLoopResult& trained,
                RunMetrics* metrics) {
  metrics->set_final_train_loss(trained.last_loss);
  if (!trained.step_capture.empty()) {
    metrics->set_step_capture(trained.step_capture);
    metrics->set_captured_steps(static_cast<int32_t>(trained.captured_steps));
  }
  metrics->set_parameters(model.NumParameters());
  if (const int64_t inactive = model.NumInactiveParameters(); inactive > 0)
    metrics->set_active_parameters(static_cast<double>(model.NumParameters() - inactive));
  metrics->set_tokens_per_second(trained.tokens_seen / std::max(trained.train_seconds, 1e-9));
  metrics->set_tokens_trained(static_cast<double>(trained.tokens_seen));
  metrics->set_kv_cache_bytes_per_token(model.KvCacheBytesPerToken(sizeof(float)));
  if (const int64_t bound = model.KvCacheBytesBound(sizeof(float)); bound > 0)
    metrics->set_kv_cache_bytes_bound(static_cast<double>(bound));
  if (const int64_t state = model.RecurrentStateBytes(sizeof(float)); state > 0)
    metrics->set_recurrent_state_bytes(static_cast<double>(state));
  metrics->set_backend(runtime.backend());
  metrics->set_threads(runtime.threads());
  metrics->set_precision(runtime.precision());
  for (const auto& [name, var] : model.NamedParameters()) {
    const size_t layers = name.find(".layers.");  // "decoder.layers.3.ffn.w_1.weight"
    if (layers == std::string::npos) continue;
    const size_t end = name.find('.', layers + 8);
    const std::string layer = name.substr(0, end);
    auto* list = metrics->mutable_layer_parameters();
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& l) { return l.layer() == layer; });
    RunMetrics::LayerParameters* entry = it != list->end() ? &*it : list->Add();
    entry->set_layer(layer);
    entry->set_parameters(entry->parameters() + static_cast<double>(var.value().numel()));
  }
  metrics->set_peak_memory_bytes(static_cast<double>(AllocatorFor(CurrentDevice()).Stats().peak_in_use_bytes));
  if (trained.peak_memory_bytes > 0) metrics->set_train_peak_memory_bytes(static_cast<double>(trained.peak_memory_bytes));
  if (trained.peak_rss_bytes > 0) metrics->set_train_peak_rss_bytes(static_cast<double>(trained.peak_rss_bytes));
  RecordAuxiliaryOutputs(trained, metrics);
  for (const RunMetrics::Probe& probe : trained.probes) *metrics->add_probes() = probe;  // train.probe_every
  if (!trained.probes.empty()) metrics->set_probe_seconds(trained.probe_seconds);
}

}  // namespace

absl::StatusOr<RunMetrics> FinalMetrics(const Experiment& spec, const Model& model, const Task& task,
                                        const TrainLoopResult& trained, bool eval_only, Communicator& world) {
  RunMetrics metrics;
  TVLAB_RETURN_IF_ERROR(Evaluate(model, task, spec.eval(), spec.model(), /*full=*/true, &metrics, &world));
  TVLAB_RETURN_IF_ERROR(EvaluateAtContexts(model, task, spec.eval(), spec.model(), &metrics));
  if (spec.eval().decode_speed_tokens() > 0) {
    // Timed from the task's first token id; greedy, so the same tokens
    // every timing.
    const DecodeSpeed speed = MeasureDecodeSpeed(model, /*first_token=*/0, spec.eval().decode_speed_tokens(),
                                                 /*repeats=*/3);
    metrics.set_decode_tokens_per_second(speed.tokens_per_second());
  }
  RecordSpeculativeDecoding(spec, model, task, &metrics);
  RecordCost(spec.runtime(), model, trained, &metrics);
  metrics.set_train_seconds(eval_only ? 0 : trained.train_seconds);
  metrics.set_steps(eval_only ? 0 : spec.train().steps());
  // Measured over the spec's whole training stream (also for --eval_only,
  // whose weights were trained on it elsewhere).
  const EvalTrainOverlap overlap = MeasureEvalTrainOverlap(
      task, spec.seed(), spec.train().steps() * spec.train().grad_accumulation(), spec.train().batch_size(),
      spec.eval().seed(), metrics.eval_examples());
  metrics.set_eval_train_overlap(static_cast<int32_t>(overlap.overlapping));
  metrics.set_eval_train_overlap_fraction(overlap.fraction());
  const int64_t samples = int64_t{spec.train().steps()} * spec.train().grad_accumulation() * spec.train().batch_size();
  const double epochs = task.TrainEpochs(spec.seed(), samples);
  if (epochs >= 0) metrics.set_epochs(epochs);
  for (const Task::TrainSourceUse& use : task.TrainSources(spec.seed(), samples)) {
    RunMetrics::TrainSource* source = metrics.add_train_sources();
    source->set_source(use.source);
    source->set_share(use.share);
    source->set_samples(static_cast<double>(use.samples));
    source->set_tokens(static_cast<double>(use.tokens));
    source->set_epochs(use.epochs);
  }
  return metrics;
}

AttentionCallCounts AttentionCallCounts::Now() { return {FusedAttentionCalls(), UnfusedAttentionCalls()}; }

void RecordAttentionCalls(const AttentionCallCounts& at_start, RunMetrics* metrics) {
  const AttentionCallCounts now = AttentionCallCounts::Now();
  metrics->set_fused_attention_calls(static_cast<double>(now.fused - at_start.fused));
  metrics->set_unfused_attention_calls(static_cast<double>(now.unfused - at_start.unfused));
}

void RecordOptimizer(const OptimizerSpec& spec, const Optimizer& optimizer, RunMetrics* metrics) {
  metrics->set_optimizer(spec.plugin());
  metrics->set_optimizer_state_bytes(static_cast<double>(OptimizerStateBytes(optimizer)));
}

void RecordEfficiency(double train_flops_per_token, const DevicePeak& peak, RunMetrics* metrics) {
  const double achieved = metrics->tokens_per_second() * train_flops_per_token;
  metrics->set_train_flops_per_token(train_flops_per_token);
  metrics->set_achieved_flops_per_second(achieved);
  RunMetrics::ComputeEfficiency* efficiency = metrics->mutable_efficiency();
  efficiency->set_device(peak.device);
  if (peak.flops_per_second > 0) {
    efficiency->set_mfu(ModelFlopsUtilisation(achieved, peak));
    efficiency->set_peak_flops_per_second(peak.flops_per_second);
    efficiency->set_basis(peak.basis);
    efficiency->set_peak_source(peak.source);
  } else {
    efficiency->set_unknown_peak(peak.unknown_why);
  }
}

void RecordCheckpointing(const TrainSpec& train, RunMetrics* metrics) {
  metrics->set_activation_checkpointing(TrainSpec::ActivationCheckpointing_Name(train.activation_checkpointing()));
}

int64_t ProcessPeakRssBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

RunMetrics DivergedMetrics(const RuntimeSpec& runtime, const Model& model, const TrainLoopResult& trained) {
  RunMetrics metrics;
  metrics.set_diverged_at_step(static_cast<int32_t>(*trained.diverged_at_step));
  metrics.set_diverged_loss(trained.diverged_loss);
  RecordCost(runtime, model, trained, &metrics);
  metrics.set_train_seconds(trained.train_seconds);
  metrics.set_steps(static_cast<int32_t>(trained.steps_done));
  return metrics;
}

}  // namespace tvlab
