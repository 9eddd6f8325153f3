#include "framework/capture/step_capture.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "framework/backend/backend.h"
#include "framework/capture/chain_scratch.h"
#include "framework/capture/pointwise_fusion.h"
#include "framework/capture/recording_backend.h"
#include "framework/core/status_macros.h"

namespace tvlab {
namespace {

// Whether two host copies hold the same floats, bit for bit (NaNs too).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;  // host: copies
}

CapturedStepResult FromEager(const EagerStep& e) { return CapturedStepResult{e.loss.item(), e.backward_seconds, false}; }

}  // namespace

StepCapture::StepCapture(TrainSpec::StepCapture mode, std::string why_not,
                         const std::vector<std::pair<std::string, Var>>& params, std::ostream& progress)
    : mode_(mode), params_(params), progress_(progress) {
  if (mode == TrainSpec::CAPTURE_OFF) {
    summary_ = "off: train.step_capture is CAPTURE_OFF";
  } else if (!why_not.empty()) {
    summary_ = "off: " + why_not;
    progress_ << "step capture: off (" << why_not << "); every step runs eagerly\n";
  } else {
    phase_ = Phase::kWarmUp;
    summary_ = "off: training ended before the step was captured";
  }
}

absl::Status StepCapture::TurnOff(const std::string& why) {
  phase_ = Phase::kOff;
  active_ = nullptr;
  first_ = recording_ = capture::StepRecording();
  kept_grads_.clear();
  kept_loss_ = Tensor();
  summary_ = "off: " + why;
  if (mode_ == TrainSpec::CAPTURE_REQUIRED)
    return absl::FailedPreconditionError(absl::StrCat(
        "train.step_capture is CAPTURE_REQUIRED, but the training step cannot be captured: ", why,
        ". Set train.step_capture: CAPTURE_AUTO to train eagerly instead"));
  progress_ << "step capture: off (" << why << "); every later step runs eagerly\n";
  progress_.flush();
  return absl::OkStatus();
}

void StepCapture::MarkBackward() {
  if (active_ != nullptr) active_->backward_begin = active_->ops.size();
}

absl::StatusOr<CapturedStepResult> StepCapture::Run(int64_t step, const Batch& batch,
                                                    const std::function<EagerStep()>& eager) {
  switch (phase_) {
    case Phase::kOff: return FromEager(eager());
    case Phase::kWarmUp: {
      const EagerStep e = eager();
      phase_ = Phase::kRecordFirst;
      pool_ = std::make_shared<BufferPool>(CurrentBackend().device());
      return FromEager(e);
    }
    case Phase::kRecordFirst:
    case Phase::kRecordSecond: return Record(step, batch, eager);
    case Phase::kVerify: return Verify(step, batch, eager);
    case Phase::kLive: return Replay(step, batch, eager);
  }
  return FromEager(eager());
}

absl::StatusOr<CapturedStepResult> StepCapture::Record(int64_t step, const Batch& batch,
                                                       const std::function<EagerStep()>& eager) {
  if (pool_->in_use() != 0) {
    TVLAB_RETURN_IF_ERROR(TurnOff(absl::StrFormat(
        "%d buffers of the previous recorded step were still held at step %d", pool_->in_use(), step)));
    return FromEager(eager());
  }
  capture::StepRecording recording;
  recording.step = static_cast<uint64_t>(step);
  recording.batch = batch;
  EagerStep e;
  {
    capture::RecordingScope scope(&recording, pool_);
    active_ = &recording;
    e = eager();
    active_ = nullptr;
  }
  const CapturedStepResult result = FromEager(e);
  if (recording.readbacks > 0) {
    TVLAB_RETURN_IF_ERROR(TurnOff(absl::StrFormat(
        "the step reads %d device values on the host between its kernels (a module that inspects a tensor)",
        recording.readbacks)));
    return result;
  }
  if (phase_ == Phase::kRecordFirst) {
    first_ = std::move(recording);
    phase_ = Phase::kRecordSecond;
    return result;
  }
  absl::Status agreed = capture::Agree(first_, &recording);
  if (agreed.ok()) agreed = capture::PinOutsideBuffers(*pool_, CurrentBackend().device(), &recording);
  first_ = capture::StepRecording();
  if (!agreed.ok()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(std::string(agreed.message())));
    return result;
  }
  recording_ = std::move(recording);
  fusion_ = capture::FusePointwiseChains(&recording_);
  scratch_ = capture::KeepDeadOutputsInScratch(&recording_, *pool_, CurrentBackend().KeepsMaskBits());
  if (absl::Status kept = KeepOutputs(e.loss); !kept.ok()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(std::string(kept.message())));
    return result;
  }
  phase_ = Phase::kVerify;
  return result;
}

absl::Status StepCapture::KeepOutputs(const Tensor& loss) {
  if (!pool_->Holds(loss.ptr())) return absl::FailedPreconditionError("the loss is not the step's own buffer");
  kept_loss_ = loss;
  kept_grads_.clear();
  for (const auto& [name, var] : params_) {
    const Tensor& grad = var.grad();
    if (grad.defined() && !pool_->Holds(grad.ptr()))
      return absl::FailedPreconditionError(absl::StrCat("the gradient of ", name, " is not the step's own buffer"));
    kept_grads_.push_back(grad);
  }
  held_ = pool_->in_use();  // the step's other buffers are released by now
  return absl::OkStatus();
}

absl::Status StepCapture::PoolFree(int64_t step) const {
  if (pool_->in_use() == held_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "at step %d, %d buffers of an earlier step are still held (the replay would overwrite them)", step,
      pool_->in_use() - held_));
}

void StepCapture::AttachGradients() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Var var = params_[i].second;
    var.mutable_grad() = kept_grads_[i];
  }
}

absl::StatusOr<CapturedStepResult> StepCapture::Verify(int64_t step, const Batch& batch,
                                                       const std::function<EagerStep()>& eager) {
  if (!capture::SameBatchLayout(recording_, batch)) return FromEager(eager());  // try the next step
  if (absl::Status free = PoolFree(step); !free.ok()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(std::string(free.message())));
    return FromEager(eager());
  }
  double backward_seconds = 0;
  absl::Status replayed = capture::Replay(recording_, batch, static_cast<uint64_t>(step), CurrentBackend(),
                                          AllocatorFor(CurrentBackend().device()).memory(), &backward_seconds);
  if (!replayed.ok()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(std::string(replayed.message())));
    return FromEager(eager());
  }
  const std::vector<float> replay_loss = kept_loss_.ToVector();
  std::vector<std::vector<float>> replay_grads;
  for (const Tensor& g : kept_grads_) replay_grads.push_back(g.defined() ? g.ToVector() : std::vector<float>());
  // The eager step draws on the pool's free blocks too (the replay's are
  // all free again but the kept gradients and loss), so the check does not
  // hold a second step's memory.
  EagerStep e;
  {
    ScopedBufferPool in_pool(pool_);
    e = eager();  // the parameters' gradients are its own
  }
  std::string differs;
  if (!SameBits(replay_loss, e.loss.ToVector())) differs = "the loss";
  for (size_t i = 0; i < params_.size() && differs.empty(); ++i) {
    const Tensor& g = params_[i].second.grad();
    if (g.defined() != kept_grads_[i].defined() || !SameBits(replay_grads[i], g.defined() ? g.ToVector() : std::vector<float>()))
      differs = "the gradient of " + params_[i].first;
  }
  if (!differs.empty()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(absl::StrFormat("the replayed step %d gave %s different from the eager step's",
                                                  step, differs)));
    return FromEager(e);
  }
  phase_ = Phase::kLive;
  // The eager steps' blocks cached by the allocator are not needed again
  // until evaluation: given back, so the pool does not double the memory.
  AllocatorFor(CurrentBackend().device()).EmptyCache();
  int64_t kernels = 0;
  for (const capture::RecordedOp& op : recording_.ops) kernels += op.kind == capture::RecordedOp::Kind::kKernel;
  summary_ = absl::StrFormat(
      "on from step %d: %d operations (%d kernel calls, %d of them elementwise chains fused from %d calls) "
      "replayed per step from a %.1f MiB pool, %d dropout masks kept as bits and %d redrawn for the backward, "
      "and %d chain results (%.2f MiB) kept out of memory",
      step + 1, recording_.ops.size(), kernels, fusion_.chains, fusion_.calls, pool_->bytes() / 1048576.0,
      scratch_.masks_kept, scratch_.masks_redrawn, scratch_.scratch_steps, scratch_.bytes_not_written / 1048576.0);
  progress_ << "step capture: " << summary_ << "; step " << step << "'s replay matched the eager step bit for bit\n";
  progress_.flush();
  return FromEager(e);
}

absl::StatusOr<CapturedStepResult> StepCapture::Replay(int64_t step, const Batch& batch,
                                                       const std::function<EagerStep()>& eager) {
  if (!capture::SameBatchLayout(recording_, batch)) return FromEager(eager());  // another shape: eager
  if (absl::Status free = PoolFree(step); !free.ok()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(std::string(free.message())));
    return FromEager(eager());
  }
  CapturedStepResult result;
  absl::Status replayed =
      capture::Replay(recording_, batch, static_cast<uint64_t>(step), CurrentBackend(),
                      AllocatorFor(CurrentBackend().device()).memory(), &result.backward_seconds,
                      profiling_ ? &profile_ : nullptr);
  if (!replayed.ok()) {
    TVLAB_RETURN_IF_ERROR(TurnOff(absl::StrFormat("at step %d, %s", step, replayed.message())));
    return FromEager(eager());
  }
  AttachGradients();
  result.loss = kept_loss_.item();
  result.replayed = true;
  ++replayed_;
  return result;
}

std::string StepCapture::ProfileTable(double peak_flops_per_second) const {
  return profile_.steps() > 0 ? profile_.Table(recording_, peak_flops_per_second) : std::string();
}

std::string StepCapture::ProfileSummary(double peak_flops_per_second) const {
  return profile_.steps() > 0 ? profile_.Summary(recording_, peak_flops_per_second) : std::string();
}

}  // namespace tvlab
