#include "framework/capture/step_profile.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/capture/kernel_call_of.h"

namespace tvlab {
namespace capture {
namespace {

// The GemmDesc of a GEMM call (null: another kernel).
const GemmDesc* GemmOf(const KernelCall& call) {
  if (const auto* g = ArgumentsOf<kernel_signature::Gemm>(call)) return &std::get<0>(*g);
  if (const auto* g = ArgumentsOf<kernel_signature::GemmBias>(call)) return &std::get<0>(*g);
  if (const auto* g = ArgumentsOf<kernel_signature::GemmAndColumnSums>(call)) return &std::get<0>(*g);
  return nullptr;
}

}  // namespace

std::string ProfileKernel(const RecordedOp& op) {
  switch (op.kind) {
    case RecordedOp::Kind::kKernel: return KernelName(op.call->kernel());
    case RecordedOp::Kind::kFill: return "fill";
    case RecordedOp::Kind::kCopy: return "copy";
    case RecordedOp::Kind::kUpload: return "upload";
  }
  return "";
}

std::string ProfileDetail(const RecordedOp& op) {
  const GemmDesc* d = op.kind == RecordedOp::Kind::kKernel ? GemmOf(*op.call) : nullptr;
  if (d == nullptr) return "";
  return absl::StrCat(d->m, " x ", d->n, " x ", d->k, ", batch ", d->batch, d->trans_a ? ", A^T" : "",
                      d->trans_b ? ", B^T" : "");
}

void StepProfile::Add(size_t op, size_t ops, double seconds) {
  if (seconds_.size() < ops) seconds_.resize(ops, 0.0);
  seconds_[op] += seconds;
}

double StepProfile::MicrosecondsPerStep(size_t op) const {
  return op < seconds_.size() && steps_ > 0 ? seconds_[op] * 1e6 / static_cast<double>(steps_) : 0.0;
}

std::string StepProfile::Table(const StepRecording& recording) const {
  double total = 0;
  for (size_t i = 0; i < recording.ops.size(); ++i) total += MicrosecondsPerStep(i);
  std::string out = "op\tpass\tkernel\tdetail\tus_per_step\tshare\n";
  for (size_t i = 0; i < recording.ops.size(); ++i) {
    const double us = MicrosecondsPerStep(i);
    absl::StrAppendFormat(&out, "%d\t%s\t%s\t%s\t%.2f\t%.4f\n", i, i < recording.backward_begin ? "forward" : "backward",
                          ProfileKernel(recording.ops[i]), ProfileDetail(recording.ops[i]), us,
                          total > 0 ? us / total : 0.0);
  }
  return out;
}

std::string StepProfile::Summary(const StepRecording& recording, int top) const {
  std::map<std::string, std::pair<double, int>> by_kernel;  // microseconds a step, calls
  double total = 0;
  for (size_t i = 0; i < recording.ops.size(); ++i) {
    auto& [us, calls] = by_kernel[ProfileKernel(recording.ops[i])];
    us += MicrosecondsPerStep(i);
    ++calls;
    total += MicrosecondsPerStep(i);
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> kernels(by_kernel.begin(), by_kernel.end());
  std::sort(kernels.begin(), kernels.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string out = absl::StrFormat("%.2f ms a replayed step over %d steps:", total / 1e3, steps_);
  for (int i = 0; i < std::min<int>(top, static_cast<int>(kernels.size())); ++i) {
    const auto& [name, time] = kernels[i];
    absl::StrAppendFormat(&out, "%s %s %.1f%% (%d call%s)", i == 0 ? "" : ",", name,
                          total > 0 ? 100 * time.first / total : 0.0, time.second, time.second == 1 ? "" : "s");
  }
  return out;
}

}  // namespace capture
}  // namespace tvlab
