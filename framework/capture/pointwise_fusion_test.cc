// FusePointwiseChains on hand-built recordings: which runs of elementwise
// calls become one PointwiseChain (and which stay apart: broadcasting, other
// sizes, overlapping buffers, another op kind, a fill, the start of the
// backward pass), and that the fused operations replay the unfused ones'
// bits, dropout rekeyed to the replayed step included.

#include "framework/capture/pointwise_fusion.h"

#include <cstring>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/capture/kernel_call_of.h"
#include "framework/capture/recorded_ops_for_test.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace capture {
namespace {

using test_ops::BinaryOp_;
using test_ops::kStep;
using test_ops::Mask;
using test_ops::Op;
using test_ops::UnaryOp_;

constexpr int64_t kN = 3000;

Tensor Filled(int64_t n, float salt) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37 + 11) % 29) / 7.0f - 2.0f + salt;
  return Tensor::FromVector({n}, v, Device::kCpu);
}

// The kernels of `r`'s operations, by name.
std::vector<std::string> Names(const StepRecording& r) {
  std::vector<std::string> names;
  for (const RecordedOp& op : r.ops) names.push_back(op.kind == RecordedOp::Kind::kKernel ? KernelName(op.call->kernel()) : "fill");
  return names;
}

StepRecording Recording(std::vector<RecordedOp> ops) {
  StepRecording r;
  r.step = kStep;
  r.backward_begin = ops.size();
  r.ops = std::move(ops);
  return r;
}

using Strings = std::vector<std::string>;

TEST(PointwiseFusion, DropoutIntoTheResidualAddIsOneChain) {
  Tensor x = Filled(kN, 0), res = Filled(kN, 1), mask = Filled(kN, 2), y = Filled(kN, 3), out = Filled(kN, 4);
  StepRecording r = Recording({Mask(mask), BinaryOp_(BinaryOp::kMul, x, mask, y), BinaryOp_(BinaryOp::kAdd, res, y, out)});
  const FusionSummary s = FusePointwiseChains(&r);
  EXPECT_EQ(s.chains, 1);
  EXPECT_EQ(s.calls, 3);
  EXPECT_EQ(Names(r), Strings({"PointwiseChain"}));
  EXPECT_EQ(r.backward_begin, 1u);
  const auto* args = ArgumentsOf<kernel_signature::PointwiseChain>(*r.ops[0].call);
  ASSERT_NE(args, nullptr);
  const auto& [steps, n] = *args;
  EXPECT_EQ(n, kN);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].kind, PointwiseStep::Kind::kDropoutMask);
  EXPECT_EQ(steps[1].b, mask.ptr());
  EXPECT_EQ(steps[2].out, out.ptr());
}

TEST(PointwiseFusion, BroadcastsOtherSizesAndOtherOpsStayApart) {
  Tensor a = Filled(kN, 0), b = Filled(kN, 1), c = Filled(kN, 2), d = Filled(kN, 3);
  Tensor bias = Tensor::FromVector({1}, {0.5f}, Device::kCpu);
  Tensor small = Filled(kN / 2, 0), small2 = Filled(kN / 2, 1);
  StepRecording r = Recording({
      BinaryOp_(BinaryOp::kMul, a, b, c),
      BinaryOp_(BinaryOp::kAdd, c, bias, c),        // broadcast: not one pass
      BinaryOp_(BinaryOp::kAdd, a, c, d),
      BinaryOp_(BinaryOp::kAdd, small, small, small2),  // another size
      UnaryOp_(UnaryOp::kGeluErf, a, b),            // not ReLU
      BinaryOp_(BinaryOp::kSub, a, b, c),
  });
  const FusionSummary s = FusePointwiseChains(&r);
  EXPECT_EQ(s.chains, 0);
  EXPECT_EQ(Names(r), Strings({"Binary", "Binary", "Binary", "Binary", "Unary", "Binary"}));
}

// A call with n floats at `out`, big + offset (a view into a larger buffer).
RecordedOp Into(BinaryOp op, const float* a, const float* b, float* out) {
  const Shape s = {kN};
  return Op(MakeKernelCall<kernel_signature::Binary>(Kernel::kBinary, &Backend::Binary, {op, a, s, b, s, out, s},
                                                     kStep));
}

TEST(PointwiseFusion, OverlappingBuffersFillsAndTheBackwardStartEndRuns) {
  Tensor big = Filled(2 * kN, 0), a = Filled(kN, 1), b = Filled(kN, 2);
  float* half = big.ptr() + kN / 2;  // overlaps both halves of big
  std::vector<RecordedOp> ops = {
      Into(BinaryOp::kAdd, a.ptr(), b.ptr(), big.ptr()),
      Into(BinaryOp::kMul, a.ptr(), b.ptr(), half),  // overlaps the run's big: a new run
      Into(BinaryOp::kSub, a.ptr(), half, b.ptr()),  // joins it
      Into(BinaryOp::kMul, big.ptr(), a.ptr(), half),  // overlaps itself: alone
  };
  RecordedOp fill;
  fill.kind = RecordedOp::Kind::kFill;
  fill.fill_dst = b.ptr(), fill.fill_n = kN;
  ops.push_back(fill);
  ops.push_back(BinaryOp_(BinaryOp::kAdd, a, b, a));
  ops.push_back(BinaryOp_(BinaryOp::kMul, a, b, b));  // the backward starts here
  ops.push_back(BinaryOp_(BinaryOp::kSub, a, b, b));
  StepRecording r = Recording(std::move(ops));
  r.backward_begin = 6;
  const FusionSummary s = FusePointwiseChains(&r);
  EXPECT_EQ(Names(r), Strings({"Binary", "PointwiseChain", "Binary", "fill", "Binary", "PointwiseChain"}));
  EXPECT_EQ(s.chains, 2);
  EXPECT_EQ(s.calls, 4);
  EXPECT_EQ(r.backward_begin, 5u);
}

// The same operations, fused and not, replayed at another step: the same
// bits in every output (the fused dropout step is rekeyed like the
// recorded DropoutMask).
TEST(PointwiseFusion, FusedOperationsReplayTheUnfusedBits) {
  auto backend = MakeBackend("cpu_onednn");
  ASSERT_TRUE(backend.ok()) << backend.status();
  Tensor x = Filled(kN, 0), res = Filled(kN, 1), mask = Filled(kN, 2), y = Filled(kN, 3), out = Filled(kN, 4),
         r1 = Filled(kN, 5);
  auto ops = [&] {
    return std::vector<RecordedOp>{Mask(mask), BinaryOp_(BinaryOp::kMul, x, mask, y),
                                   BinaryOp_(BinaryOp::kAdd, res, y, out), UnaryOp_(UnaryOp::kRelu, out, r1)};
  };
  auto outputs = [&] {
    std::vector<float> all;
    for (const Tensor* t : {&mask, &y, &out, &r1}) {
      const std::vector<float> v = t->ToVector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  StepRecording plain = Recording(ops()), fused = Recording(ops());
  ASSERT_EQ(FusePointwiseChains(&fused).chains, 1);
  for (RecordedOp& op : plain.ops) op.call->Run(**backend, 8);
  const std::vector<float> want = outputs();
  for (const Tensor* t : {&mask, &y, &out, &r1})  // other values, so the fused run must write them all
    (**backend).DropoutMask(RngStream(9, RngPurpose::kDropout, 0), 0.5f, t->ptr(), kN);
  for (RecordedOp& op : fused.ops) op.call->Run(**backend, 8);
  const std::vector<float> got = outputs();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  // Step 8's mask is not step 3's: the replay did move the stream.
  Tensor m3 = Filled(kN, 0);
  (**backend).DropoutMask(RngStream(5, RngPurpose::kDropout, kStep), 0.25f, m3.ptr(), kN);
  EXPECT_NE(std::memcmp(m3.ToVector().data(), mask.ToVector().data(), kN * sizeof(float)), 0);
}

}  // namespace
}  // namespace capture
}  // namespace tvlab
