#ifndef TVLAB_FRAMEWORK_CAPTURE_STEP_PROFILE_H_
#define TVLAB_FRAMEWORK_CAPTURE_STEP_PROFILE_H_

// train.step_profile: how long each operation of the captured step takes,
// summed over the replayed steps (capture::Replay times them on the host
// clock; not on a GPU, whose kernels run asynchronously), and
// the two views of it a run leaves: step_profile.tsv, a row an operation
// in replay order, and a one-line summary by kernel for the progress
// stream. The view torch.profiler's key_averages() gives of an eager step,
// for the step tvlab actually runs (fused chains and all).

#include <cstdint>
#include <string>
#include <vector>

#include "framework/capture/step_recording.h"

namespace tvlab {
namespace capture {

class StepProfile {
 public:
  // Operation `op` of a replayed step of `ops` operations took `seconds`.
  void Add(size_t op, size_t ops, double seconds);
  // A replayed step ended.
  void StepDone() { ++steps_; }
  int64_t steps() const { return steps_; }

  // step_profile.tsv for `recording` (the operations timed): a header,
  // then per operation its index, pass (forward or backward), kernel (or
  // fill, copy, upload), detail (a GEMM's shape), microseconds a step,
  // share of the replayed step, and for a GEMM its achieved GFLOP/s (2 m
  // n k a product; a GemmAndColumnSums's time includes its sums) and their
  // fraction of `peak_flops_per_second` (the run's measured peak, as its
  // MFU; that column empty where it is 0).
  std::string Table(const StepRecording& recording, double peak_flops_per_second = 0) const;
  // "723.63 ms a replayed step over 6 steps: GemmAndColumnSums 28.0%
  // (25 calls), ...; products 564.73 ms at 139.7 GFLOP/s (58.3% of the
  // peak)" with the `top` kernels by time, most first, then the GEMMs
  // together (the fraction only with a peak; no clause without GEMMs).
  std::string Summary(const StepRecording& recording, double peak_flops_per_second = 0, int top = 6) const;

 private:
  double MicrosecondsPerStep(size_t op) const;
  std::vector<double> seconds_;  // by operation, over the steps
  int64_t steps_ = 0;
};

// What a profile row names: the kernel's name, or "fill", "copy", "upload".
std::string ProfileKernel(const RecordedOp& op);
// A GEMM's "m x n x k, batch b, A^T, B^T"; "" for other operations.
std::string ProfileDetail(const RecordedOp& op);
// A GEMM's floating-point operations, 2 m n k a product of the batch; 0 for
// other operations.
double ProfileFlops(const RecordedOp& op);

}  // namespace capture
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_CAPTURE_STEP_PROFILE_H_
