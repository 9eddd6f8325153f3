#ifndef TVLAB_FRAMEWORK_CAPTURE_STEP_CAPTURE_H_
#define TVLAB_FRAMEWORK_CAPTURE_STEP_CAPTURE_H_

// train.step_capture: a captured training step (the CPU analogue of a CUDA
// graph, or of a jitted step). The forward and backward pass of a
// fixed-shape step is recorded as a list of kernel calls and memory
// operations on buffers from a private pool, then replayed: no autograd
// graph, no module code, no allocation, no shape checks per step.
//
// Phases, one per training step of the run:
//   warm-up      eager (first-use tables and optimizer state are built);
//   record 1, 2  eager, recorded; the two recordings must agree
//                (step_recording.h: Agree), and every buffer they use
//                must be the pool's or a live tensor's; the agreed
//                recording's elementwise chains are fused
//                (pointwise_fusion.h);
//   verify       the step is replayed and then run eagerly; the loss and
//                every gradient must match bit for bit (the eager result
//                is the one used);
//   live         replayed; a step whose batch has another shape (or host
//                arrays that replay would not copy) runs eagerly.
// Anything that stops a phase turns capture off for the rest of the run and
// is said on the progress stream and in metrics.json (step_capture), or is
// an error under CAPTURE_REQUIRED. Training's numbers are bit-identical
// either way.

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/autograd/var.h"
#include "framework/capture/chain_scratch.h"
#include "framework/capture/pointwise_fusion.h"
#include "framework/capture/step_profile.h"
#include "framework/capture/step_recording.h"
#include "framework/interfaces/task.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// One eager forward and backward pass: the task loss (a one-element tensor)
// and the seconds spent in Backward.
struct EagerStep {
  Tensor loss;
  double backward_seconds = 0;
};

struct CapturedStepResult {
  double loss = 0;
  double backward_seconds = 0;
  bool replayed = false;
};

class StepCapture {
 public:
  // `why_not`: why this run cannot capture at all (empty: it may try).
  StepCapture(TrainSpec::StepCapture mode, std::string why_not,
              const std::vector<std::pair<std::string, Var>>& params, std::ostream& progress);

  // Step `step` on `batch`; `eager` runs it eagerly (and calls MarkBackward
  // between the loss and Backward). An error only under CAPTURE_REQUIRED.
  absl::StatusOr<CapturedStepResult> Run(int64_t step, const Batch& batch, const std::function<EagerStep()>& eager);
  // Marks where the backward pass starts in the step being recorded.
  void MarkBackward();

  // metrics.json's step_capture: "on from step N: ..." or "off: <why>".
  const std::string& summary() const { return summary_; }
  int64_t replayed_steps() const { return replayed_; }

  // train.step_profile: time every operation of the replayed steps from
  // now on (step_profile.h). Then, once a step was replayed, the run's
  // step_profile.tsv and its summary by kernel, the GEMMs' rates against
  // the run's measured peak (0: none known); empty before.
  void EnableProfile() { profiling_ = true; }
  std::string ProfileTable(double peak_flops_per_second) const;
  std::string ProfileSummary(double peak_flops_per_second) const;

 private:
  enum class Phase { kOff, kWarmUp, kRecordFirst, kRecordSecond, kVerify, kLive };

  absl::StatusOr<CapturedStepResult> Record(int64_t step, const Batch& batch, const std::function<EagerStep()>& eager);
  absl::StatusOr<CapturedStepResult> Verify(int64_t step, const Batch& batch, const std::function<EagerStep()>& eager);
  absl::StatusOr<CapturedStepResult> Replay(int64_t step, const Batch& batch, const std::function<EagerStep()>& eager);
  absl::Status KeepOutputs(const Tensor& loss);
  void AttachGradients();
  // OK when no pool buffer but the kept ones is held.
  absl::Status PoolFree(int64_t step) const;
  // Capture off for the rest of the run (an error under CAPTURE_REQUIRED).
  absl::Status TurnOff(const std::string& why);

  TrainSpec::StepCapture mode_;
  const std::vector<std::pair<std::string, Var>>& params_;
  std::ostream& progress_;
  Phase phase_ = Phase::kOff;
  std::string summary_;
  int64_t replayed_ = 0;
  std::shared_ptr<BufferPool> pool_;
  capture::StepRecording first_, recording_;
  capture::FusionSummary fusion_;  // of recording_'s elementwise chains
  capture::ScratchSummary scratch_;  // their redrawn masks and unwritten outputs
  bool profiling_ = false;
  capture::StepProfile profile_;  // of the live replays, when profiling_
  capture::StepRecording* active_ = nullptr;  // being recorded
  std::vector<Tensor> kept_grads_;            // per parameter (undefined: none)
  Tensor kept_loss_;
  // The pool buffers the kept gradients and loss hold: before a replay no
  // other pool buffer may be held (replay overwrites every one).
  int64_t held_ = 0;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_STEP_CAPTURE_H_
