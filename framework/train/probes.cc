#include "framework/train/probes.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/attention/attention_statistics.h"
#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/distributed/shard_batch.h"
#include "framework/model/activation_recorder.h"
#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Mean, std, max and log-sum-exp statistics of logits (B, T, V), reduced on
// the device (a few scalars come back).
std::vector<ProbeValue> LogitStatistics(const Var& logits) {
  const int64_t v = logits.dim(-1), rows = logits.value().numel() / v;
  const Var flat = Reshape(logits, {rows, v});  // (N, V)
  const double mean = Mean(flat).value().item(), mean_sq = Mean(Square(flat)).value().item();
  const double max = DeviceMax(flat.value());
  // lse per row = max + log sum exp(l - max), the sum as (N, V) @ (V, 1).
  // A row whose own max is ~87 below the global one underflows to -inf.
  const Var ones(Tensor::Full({v, 1}, 1.0f));
  const Var lse = AddScalar(Log(MatMul(Exp(AddScalar(flat, static_cast<float>(-max))), ones)),
                            static_cast<float>(max));  // (N, 1)
  return {{"logits/mean", mean},
          {"logits/std", std::sqrt(std::max(0.0, mean_sq - mean * mean))},
          {"logits/max", max},
          {"logits/lse_mean", Mean(lse).value().item()},
          {"logits/lse_sq_mean", Mean(Square(lse)).value().item()}};
}

}  // namespace

std::string GradientGroupOf(const std::string& name) {
  const size_t layers = name.find(".layers.");  // "decoder.layers.3.ffn.w_1.weight"
  if (layers != std::string::npos) return name.substr(0, name.find('.', layers + 8));
  return name.substr(0, name.find('.'));
}

TrainingProbes::TrainingProbes(const TrainSpec& train, uint64_t seed, const Model& model, const Task& task,
                               const NamedVars& params, int rank, int world)
    : every_(train.probe_every()),
      steps_(train.steps()),
      accumulation_(train.grad_accumulation()),
      batch_size_(train.batch_size()),
      seed_(seed),
      rank_(rank),
      world_(world),
      model_(model),
      task_(task),
      params_(params) {
  for (const auto& [name, var] : params_) {
    const std::string group = GradientGroupOf(name);
    auto it = std::find(groups_.begin(), groups_.end(), group);
    group_of_.push_back(static_cast<size_t>(it - groups_.begin()));
    if (it == groups_.end()) groups_.push_back(group);
  }
}

bool TrainingProbes::Due(int64_t step) const {
  return every_ > 0 && (step % every_ == 0 || step == steps_ - 1);
}

void TrainingProbes::ForwardOn(const Batch& batch, uint64_t index) {
  NoGradGuard no_grad;
  ActivationRecorder activations;
  AttentionStatistics attention;
  AuxiliaryOutputs auxiliary;
  AuxiliaryScope collect(&auxiliary);
  const Var logits = model_.Forward(batch, ForwardContext{false, seed_, static_cast<int64_t>(index)});  // (B, T, V)
  for (const auto& [name, rms] : activations.rms()) forward_values_.push_back({"activation_rms/" + name, rms});
  for (const AttentionStatistics::Layer& l : attention.layers()) {
    forward_values_.push_back({"attention_entropy/" + l.path, l.entropy});
    forward_values_.push_back({"attention_max_logit/" + l.path, l.max_logit});
  }
  for (const ProbeValue& v : LogitStatistics(logits)) forward_values_.push_back(v);
  for (const AuxiliaryStatistic& s : auxiliary.statistics())
    if (s.name.find("expert_load") != std::string::npos)
      forward_values_.push_back({"router_load/" + s.name, s.value.value().item()});
}

void TrainingProbes::ProbeForward(int64_t step) {
  if (!Due(step)) return;
  const auto start = Clock::now();
  const int64_t index = step * accumulation_;  // the step's first micro-batch
  const Batch global = task_.TrainBatch(seed_, index, batch_size_);
  ForwardOn(world_ == 1 ? global : ShardBatch(global, rank_, world_), index);
  seconds_ += SecondsSince(start);
}

void TrainingProbes::ProbeGradients() {
  const auto start = Clock::now();
  // One double accumulator per group on the device, G doubles copied back.
  const size_t g = groups_.size();
  DeviceInts acc = DeviceInts::Empty(static_cast<int64_t>(2 * g));  // 8 bytes per group
  std::vector<double> sums(g, 0.0);
  DeviceMemory& memory = AllocatorFor(acc.device()).memory();
  memory.CopyFromHost(sums.data(), acc.ptr(), g * sizeof(double));  // host: zeros up
  double* slots = reinterpret_cast<double*>(acc.ptr());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& grad = params_[i].second.grad();
    if (grad.defined()) CurrentBackend().SumSquares(grad.ptr(), grad.numel(), slots + group_of_[i]);
  }
  memory.CopyToHost(acc.ptr(), sums.data(), g * sizeof(double));  // host: the G sums back
  for (size_t i = 0; i < g; ++i) grad_values_.push_back({"grad_norm/" + groups_[i], std::sqrt(sums[i])});
  seconds_ += SecondsSince(start);
}

std::vector<ProbeValue> TrainingProbes::TakeStep(int64_t step) {
  std::vector<ProbeValue> values = std::move(grad_values_);
  values.insert(values.end(), forward_values_.begin(), forward_values_.end());
  grad_values_.clear();
  forward_values_.clear();
  for (const ProbeValue& v : values) {
    auto it = std::find_if(summary_.begin(), summary_.end(), [&](const auto& p) { return p.name() == v.name; });
    RunMetrics::Probe* p = it != summary_.end() ? &*it : &summary_.emplace_back();
    if (p->count() == 0) {
      p->set_name(v.name);
      p->set_first(v.value);
      p->set_first_step(static_cast<int32_t>(step));
      p->set_max(v.value);
    }
    p->set_last(v.value);
    p->set_last_step(static_cast<int32_t>(step));
    p->set_max(std::max(p->max(), v.value));
    p->set_mean((p->mean() * p->count() + v.value) / (p->count() + 1));
    p->set_count(p->count() + 1);
  }
  return values;
}

std::vector<std::string> TrainingProbes::Names() {
  std::vector<std::string> names;
  if (!enabled()) return names;
  for (const std::string& g : groups_) names.push_back("grad_norm/" + g);
  ForwardOn(task_.TrainBatch(seed_, 0, 1), 0);  // one row: the names, not the values
  for (const ProbeValue& v : forward_values_) names.push_back(v.name);
  forward_values_.clear();
  return names;
}

}  // namespace tvlab
