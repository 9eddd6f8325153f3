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

double ProfileFlops(const RecordedOp& op) {
  const GemmDesc* d = op.kind == RecordedOp::Kind::kKernel ? GemmOf(*op.call) : nullptr;
  if (d == nullptr) return 0.0;
  return 2.0 * static_cast<double>(d->m) * static_cast<double>(d->n) * static_cast<double>(d->k) *
         static_cast<double>(d->batch);
}

void StepProfile::Add(size_t op, size_t ops, double seconds) {
  if (seconds_.size() < ops) seconds_.resize(ops, 0.0);
  seconds_[op] += seconds;
}

double StepProfile::MicrosecondsPerStep(size_t op) const {
  return op < seconds_.size() && steps_ > 0 ? seconds_[op] * 1e6 / static_cast<double>(steps_) : 0.0;
}

std::string StepProfile::Table(const StepRecording& recording, double peak_flops_per_second) const {
  double total = 0;
  for (size_t i = 0; i < recording.ops.size(); ++i) total += MicrosecondsPerStep(i);
  std::string out = "op\tpass\tkernel\tdetail\tus_per_step\tshare\tgflop_per_s\tof_peak\n";
  for (size_t i = 0; i < recording.ops.size(); ++i) {
    const double us = MicrosecondsPerStep(i), flops = ProfileFlops(recording.ops[i]);
    const double rate = flops > 0 && us > 0 ? flops / (us * 1e-6) : 0.0;  // FLOP/s
    absl::StrAppendFormat(&out, "%d\t%s\t%s\t%s\t%.2f\t%.4f\t%s\t%s\n", i,
                          i < recording.backward_begin ? "forward" : "backward", ProfileKernel(recording.ops[i]),
                          ProfileDetail(recording.ops[i]), us, total > 0 ? us / total : 0.0,
                          rate > 0 ? absl::StrFormat("%.1f", rate / 1e9) : "",
                          rate > 0 && peak_flops_per_second > 0 ? absl::StrFormat("%.3f", rate / peak_flops_per_second)
                                                                : "");
  }
  return out;
}

std::string StepProfile::Summary(const StepRecording& recording, double peak_flops_per_second, int top) const {
  std::map<std::string, std::pair<double, int>> by_kernel;  // microseconds a step, calls
  double total = 0, gemm_us = 0, gemm_flops = 0;
  for (size_t i = 0; i < recording.ops.size(); ++i) {
    auto& [us, calls] = by_kernel[ProfileKernel(recording.ops[i])];
    us += MicrosecondsPerStep(i);
    ++calls;
    total += MicrosecondsPerStep(i);
    if (const double flops = ProfileFlops(recording.ops[i]); flops > 0) {
      gemm_us += MicrosecondsPerStep(i);
      gemm_flops += flops;
    }
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> kernels(by_kernel.begin(), by_kernel.end());
  std::sort(kernels.begin(), kernels.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string out =
      absl::StrFormat("%.2f ms a replayed step over %d step%s:", total / 1e3, steps_, steps_ == 1 ? "" : "s");
  for (int i = 0; i < std::min<int>(top, static_cast<int>(kernels.size())); ++i) {
    const auto& [name, time] = kernels[i];
    absl::StrAppendFormat(&out, "%s %s %.1f%% (%d call%s)", i == 0 ? "" : ",", name,
                          total > 0 ? 100 * time.first / total : 0.0, time.second, time.second == 1 ? "" : "s");
  }
  if (gemm_us > 0) {
    const double rate = gemm_flops / (gemm_us * 1e-6);
    absl::StrAppendFormat(&out, "; products %.2f ms at %.1f GFLOP/s", gemm_us / 1e3, rate / 1e9);
    if (peak_flops_per_second > 0)
      absl::StrAppendFormat(&out, " (%.1f%% of the peak)", 100 * rate / peak_flops_per_second);
  }
  return out;
}

}  // namespace capture
}  // namespace tvlab
