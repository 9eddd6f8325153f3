// StepProfile on a hand-built recording: the table's rows (index, pass,
// kernel, a GEMM's shape, microseconds a step, share, a GEMM's GFLOP/s and
// fraction of the peak) and the summary by kernel, most time first, with
// the products' rate, from the seconds Replay would have added.

#include "framework/capture/step_profile.h"

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/capture/kernel_call_of.h"
#include "framework/capture/recorded_ops_for_test.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace capture {
namespace {

using test_ops::BinaryOp_;
using test_ops::kStep;
using test_ops::Op;

RecordedOp WeightGradient() {
  GemmDesc d;
  d.m = 256, d.n = 64, d.k = 4096, d.trans_a = true;
  return Op(MakeKernelCall<kernel_signature::Gemm>(Kernel::kGemm, &Backend::Gemm, {d, nullptr, nullptr, nullptr},
                                                   kStep));
}

TEST(StepProfile, TableAndSummary) {
  const Tensor a = Tensor::FromVector({4}, {1, 2, 3, 4}, Device::kCpu);
  StepRecording r;
  RecordedOp fill;
  fill.kind = RecordedOp::Kind::kFill;
  r.ops = {BinaryOp_(BinaryOp::kAdd, a, a, a), std::move(fill), WeightGradient(), BinaryOp_(BinaryOp::kMul, a, a, a)};
  r.backward_begin = 2;
  StepProfile profile;
  for (int step = 0; step < 2; ++step) {  // 100, 0, 700 and 200 microseconds a step
    for (size_t op = 0; op < 4; ++op) profile.Add(op, 4, std::vector<double>{100e-6, 0, 700e-6, 200e-6}[op]);
    profile.StepDone();
  }
  EXPECT_EQ(profile.steps(), 2);
  // The GEMM's 2 x 256 x 64 x 4096 = 134,217,728 FLOPs in 700 us: 191.7
  // GFLOP/s, 0.767 of a 250 GFLOP/s peak (no fraction without a peak).
  EXPECT_EQ(profile.Table(r),
            "op\tpass\tkernel\tdetail\tus_per_step\tshare\tgflop_per_s\tof_peak\n"
            "0\tforward\tBinary\t\t100.00\t0.1000\t\t\n"
            "1\tforward\tfill\t\t0.00\t0.0000\t\t\n"
            "2\tbackward\tGemm\t256 x 64 x 4096, batch 1, A^T\t700.00\t0.7000\t191.7\t\n"
            "3\tbackward\tBinary\t\t200.00\t0.2000\t\t\n");
  EXPECT_EQ(profile.Table(r, 250e9),
            "op\tpass\tkernel\tdetail\tus_per_step\tshare\tgflop_per_s\tof_peak\n"
            "0\tforward\tBinary\t\t100.00\t0.1000\t\t\n"
            "1\tforward\tfill\t\t0.00\t0.0000\t\t\n"
            "2\tbackward\tGemm\t256 x 64 x 4096, batch 1, A^T\t700.00\t0.7000\t191.7\t0.767\n"
            "3\tbackward\tBinary\t\t200.00\t0.2000\t\t\n");
  EXPECT_EQ(profile.Summary(r), "1.00 ms a replayed step over 2 steps: Gemm 70.0% (1 call), Binary 30.0% (2 calls), "
                                "fill 0.0% (1 call); products 0.70 ms at 191.7 GFLOP/s");
  EXPECT_EQ(profile.Summary(r, 250e9, 1),
            "1.00 ms a replayed step over 2 steps: Gemm 70.0% (1 call); products 0.70 ms at 191.7 GFLOP/s "
            "(76.7% of the peak)");
}

TEST(StepProfile, NoProductsClauseWithoutGemms) {
  const Tensor a = Tensor::FromVector({4}, {1, 2, 3, 4}, Device::kCpu);
  StepRecording r;
  r.ops = {BinaryOp_(BinaryOp::kAdd, a, a, a)};
  StepProfile profile;
  profile.Add(0, 1, 50e-6);
  profile.StepDone();
  EXPECT_EQ(profile.Summary(r, 250e9), "0.05 ms a replayed step over 1 step: Binary 100.0% (1 call)");
  EXPECT_EQ(ProfileFlops(r.ops[0]), 0.0);
  EXPECT_EQ(ProfileFlops(WeightGradient()), 2.0 * 256 * 64 * 4096);
}

}  // namespace
}  // namespace capture
}  // namespace tvlab
