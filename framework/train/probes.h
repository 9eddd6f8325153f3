#ifndef TVLAB_FRAMEWORK_TRAIN_PROBES_H_
#define TVLAB_FRAMEWORK_TRAIN_PROBES_H_

// Training probes (train.probe_every = N > 0): on steps 0, N, 2N, ... and
// the last, what studies of training stability measure:
//
//   grad_norm/<group>            L2 norm of the step's gradient (before
//                                clipping) over a layer's parameters
//                                ("decoder.layers.3") or the others of a
//                                stack or part ("decoder", "embedding")
//   activation_rms/<stack>.input, activation_rms/<stack>.layers.<i>
//                                RMS of the residual stream after each block
//   attention_entropy/<path>     mean over query rows of -sum w log w (nats)
//   attention_max_logit/<path>   largest visible attention logit
//   logits/mean, logits/std, logits/max
//                                over every element of the output logits
//   logits/lse_mean, logits/lse_sq_mean
//                                mean log-sum-exp of the output rows and its
//                                square's mean (what z-loss penalises)
//   router_load/<name>           the MoE plugins' expert_load statistics
//                                (the auxiliary channel, auxiliary_outputs.h)
//
// Gradient norms are read from the step's own gradients: one sum of squares
// per group on the device, one copy of G doubles back. Everything else comes
// from a probe forward (no gradients, no dropout) of the step's first
// micro-batch (under mpirun: this rank's shard of it) at the weights the step
// starts from, so step 0 measures the initialisation (Xiong et al. 2020).
// That forward takes the unfused attention composition (the fused kernel
// never forms the weights; attention_statistics.h) and reduces on the
// device, so the training step itself runs exactly as without probes: same
// kernels, same random streams, same numbers. The cost is that forward per
// probed step (docs/spec.md states it for configs/lm_text.pbtxt).

#include <cstdint>
#include <string>
#include <vector>

#include "framework/interfaces/task.h"
#include "framework/model/model.h"
#include "framework/schema/experiment.pb.h"
#include "framework/train/checkpoint.h"
#include "framework/train/metrics.pb.h"

namespace tvlab {

struct ProbeValue {
  std::string name;
  double value = 0;
};

class TrainingProbes {
 public:
  // Off (every call a no-op) when train.probe_every is 0. `rank` of `world`
  // picks the probe forward's rows under data parallelism.
  TrainingProbes(const TrainSpec& train, uint64_t seed, const Model& model, const Task& task,
                 const NamedVars& params, int rank = 0, int world = 1);
  bool enabled() const { return every_ > 0; }
  // Whether `step` is probed: a multiple of probe_every, or the last.
  bool Due(int64_t step) const;
  // The probe forward of `step` (before its training forward).
  void ProbeForward(int64_t step);
  // The per-group gradient norms of the step just backpropagated.
  void ProbeGradients();
  // Whether the current step has values to log.
  bool HasValues() const { return !grad_values_.empty() || !forward_values_.empty(); }
  // The current step's values, in column order; clears them and adds them
  // to the run's summary.
  std::vector<ProbeValue> TakeStep(int64_t step);
  // metrics.json's probes (one per name, column order).
  std::vector<RunMetrics::Probe> Summary() const { return summary_; }
  double seconds() const { return seconds_; }

  // The column names a run's log has (empty when off): gradient groups
  // from the parameters, the rest from a probe forward of one training row.
  std::vector<std::string> Names();

 private:
  void ForwardOn(const Batch& batch, uint64_t index);

  int64_t every_ = 0, steps_ = 0, accumulation_ = 1, batch_size_ = 1;
  uint64_t seed_ = 0;
  int rank_ = 0, world_ = 1;
  const Model& model_;
  const Task& task_;
  const NamedVars& params_;
  std::vector<std::string> groups_;    // gradient groups, first-seen order
  std::vector<size_t> group_of_;       // params_[i] -> index in groups_
  std::vector<ProbeValue> grad_values_, forward_values_;  // the current step's
  std::vector<RunMetrics::Probe> summary_;
  double seconds_ = 0;
};

// The gradient group of parameter `name`: its layer ("decoder.layers.3")
// or, outside any layer, its first path component ("embedding", "decoder").
std::string GradientGroupOf(const std::string& name);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_PROBES_H_
