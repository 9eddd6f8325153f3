// KeepDeadOutputsInScratch on hand-built recordings of a dropout into a
// residual add and its backward, with the tensors' pool lifetimes written
// out: which masks are drawn again in the backward and which chain outputs
// become scratch, which are left alone (a mask read by another kind of
// kernel, read in the forward after its chain, or held when the step ends;
// a block reused inside one chain), and that the rewritten operations
// replay the recorded ones' bits.

#include "framework/capture/chain_scratch.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/capture/kernel_call_of.h"
#include "framework/capture/pointwise_fusion.h"
#include "framework/capture/recorded_ops_for_test.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace capture {
namespace {

using test_ops::BinaryOp_;
using test_ops::Mask;
using test_ops::UnaryOp_;

constexpr int64_t kN = 3000;

// A kernel no chain takes (GELU): the next layer, or its backward.
RecordedOp Gelu(const Tensor& x, const Tensor& y) { return UnaryOp_(UnaryOp::kGeluErf, x, y); }

PoolEvent Taken(const Tensor& t, size_t op) { return {t.ptr(), true, op, false}; }
PoolEvent Given(const Tensor& t, size_t op) { return {t.ptr(), false, op, false}; }

// The step's tensors, each in a block of one pool, with other values each.
struct Tensors {
  Tensors() {
    ScopedBufferPool in_pool(pool);
    int salt = 0;
    for (Tensor* t : All()) {
      std::vector<float> v(kN);
      for (int64_t i = 0; i < kN; ++i) v[i] = static_cast<float>((i * 37 + 11 * salt) % 29) / 7.0f - 2.0f;
      *t = Tensor::FromVector({kN}, v, Device::kCpu);
      ++salt;
    }
  }
  std::vector<Tensor*> All() { return {&x, &res, &mask, &y, &z, &g, &dg, &dz, &dx, &other}; }
  std::shared_ptr<BufferPool> pool = std::make_shared<BufferPool>(Device::kCpu);
  Tensor x, res, mask, y, z, g, dg, dz, dx, other;
};

// Forward: z = res + x * mask (one chain), then g = gelu(z) for the next
// layer. Backward, from op 4: dz = gelu(dg) standing in for g's backward,
// then dx = dz * mask. The events: x, res and dg are held throughout, g
// and dx are held when the step ends (an output and a kept gradient); the
// mask, y, z and dz are given back at the end (autograd held them).
StepRecording DropoutBlock(const Tensors& t) {
  StepRecording r;
  r.step = test_ops::kStep;
  r.ops = {Mask(t.mask),
           BinaryOp_(BinaryOp::kMul, t.x, t.mask, t.y),
           BinaryOp_(BinaryOp::kAdd, t.res, t.y, t.z),
           Gelu(t.z, t.g),
           Gelu(t.dg, t.dz),
           BinaryOp_(BinaryOp::kMul, t.dz, t.mask, t.dx)};
  r.backward_begin = 4;
  r.pool_events = {Taken(t.x, 0),  Taken(t.res, 0), Taken(t.dg, 0), Taken(t.mask, 0), Taken(t.y, 1),
                   Taken(t.z, 2),  Taken(t.g, 3),   Taken(t.dz, 4), Taken(t.dx, 5),   Given(t.mask, 6),
                   Given(t.y, 6), Given(t.z, 6),   Given(t.dz, 6)};
  return r;
}

// The chain steps of operation `i` (empty: not a chain).
std::vector<PointwiseStep> Steps(const StepRecording& r, size_t i) {
  const auto* args = ArgumentsOf<kernel_signature::PointwiseChain>(*r.ops[i].call);
  return args == nullptr ? std::vector<PointwiseStep>() : std::get<0>(*args);
}
std::vector<bool> Scratch(const std::vector<PointwiseStep>& steps) {
  std::vector<bool> out;
  for (const PointwiseStep& s : steps) out.push_back(s.scratch);
  return out;
}

ScratchSummary Rewrite(StepRecording* r, const BufferPool& pool, bool keep_mask_bits = false) {
  FusePointwiseChains(r);
  return KeepDeadOutputsInScratch(r, pool, keep_mask_bits);
}

// Runs `plain` then `rewritten` at step 8 (the tensors refilled with other
// values between them) and expects the same z, g, dz and dx bits.
void ExpectSameOutputs(Backend& backend, const Tensors& t, StepRecording* plain, StepRecording* rewritten) {
  auto outputs = [&] {
    std::vector<float> all;
    for (const Tensor* x : {&t.z, &t.g, &t.dz, &t.dx}) {
      const std::vector<float> v = x->ToVector();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  for (RecordedOp& op : plain->ops) op.call->Run(backend, 8);
  const std::vector<float> want = outputs();
  for (const Tensor* x : {&t.mask, &t.y, &t.z, &t.g, &t.dz, &t.dx})  // other values: all must be written again
    backend.DropoutMask(RngStream(9, RngPurpose::kDropout, 0), 0.5f, x->ptr(), kN);
  for (RecordedOp& op : rewritten->ops) op.call->Run(backend, 8);
  const std::vector<float> got = outputs();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

TEST(ChainScratch, TheBackwardRedrawsTheMaskAndTheForwardWritesOnlyWhatIsReadLater) {
  Tensors t;
  StepRecording r = DropoutBlock(t);
  const ScratchSummary s = Rewrite(&r, *t.pool);
  EXPECT_EQ(s.masks_redrawn, 1);
  EXPECT_EQ(s.scratch_steps, 3);  // the forward's mask and y, the backward's mask
  EXPECT_EQ(s.bytes_not_written, 3 * kN * 4);
  ASSERT_EQ(r.ops.size(), 4u);  // chain, gelu | gelu, chain
  EXPECT_EQ(Scratch(Steps(r, 0)), std::vector<bool>({true, true, false}));  // z is read by the next layer
  const std::vector<PointwiseStep> backward = Steps(r, 3);
  ASSERT_EQ(backward.size(), 2u);
  EXPECT_EQ(backward[0].kind, PointwiseStep::Kind::kDropoutMask);
  EXPECT_EQ(backward[0].out, t.mask.ptr());
  EXPECT_EQ(Scratch(backward), std::vector<bool>({true, false}));  // dx is a kept gradient
}

// The rewritten operations at another step give the recorded ones' z, g,
// dz and dx bits, though the mask and y are never in memory: the backward
// reads its own draw of the step's mask.
TEST(ChainScratch, RewrittenOperationsReplayTheRecordedBits) {
  auto backend = MakeBackend("cpu_onednn");
  ASSERT_TRUE(backend.ok()) << backend.status();
  Tensors t;
  StepRecording plain = DropoutBlock(t), rewritten = DropoutBlock(t);
  ASSERT_EQ(Rewrite(&rewritten, *t.pool).masks_redrawn, 1);
  ExpectSameOutputs(**backend, t, &plain, &rewritten);
}

// Where the backend keeps mask bits, the forward's draw also writes them
// and the backward turns them back into the factors instead of drawing the
// mask again: the same z, g, dz and dx bits as the recorded operations.
TEST(ChainScratch, KeptMaskBitsReplayTheRecordedBits) {
  auto backend = MakeBackend("cpu_onednn");
  ASSERT_TRUE(backend.ok()) << backend.status();
  ASSERT_TRUE((**backend).KeepsMaskBits());
  Tensors t;
  StepRecording plain = DropoutBlock(t), rewritten = DropoutBlock(t);
  const ScratchSummary s = Rewrite(&rewritten, *t.pool, /*keep_mask_bits=*/true);
  EXPECT_EQ(s.masks_kept, 1);
  EXPECT_EQ(s.masks_redrawn, 0);
  ASSERT_EQ(rewritten.kept_masks.size(), 1u);
  const std::vector<PointwiseStep> forward = Steps(rewritten, 0), backward = Steps(rewritten, 3);
  ASSERT_EQ(backward.size(), 2u);
  EXPECT_EQ(backward[0].kind, PointwiseStep::Kind::kKeptMask);
  EXPECT_NE(backward[0].kept, nullptr);
  EXPECT_EQ(forward[0].kept, backward[0].kept);
  ExpectSameOutputs(**backend, t, &plain, &rewritten);
}

TEST(ChainScratch, AMaskAnotherKernelReadsStaysInMemory) {
  Tensors t;
  StepRecording r = DropoutBlock(t);
  r.ops.push_back(Gelu(t.mask, t.other));  // op 6: not a chain step
  r.pool_events = {Taken(t.mask, 0), Taken(t.y, 1), Given(t.y, 7), Given(t.mask, 7)};
  const ScratchSummary s = Rewrite(&r, *t.pool);
  EXPECT_EQ(s.masks_redrawn, 0);
  EXPECT_EQ(Scratch(Steps(r, 0)), std::vector<bool>({false, true, false}));
  EXPECT_EQ(r.ops.size(), 5u);  // the backward's dx = dz * mask stays one Binary
}

TEST(ChainScratch, AMaskReadInTheForwardAfterItsChainStaysInMemory) {
  Tensors t;
  StepRecording r = DropoutBlock(t);
  r.ops.insert(r.ops.begin() + 4, BinaryOp_(BinaryOp::kMul, t.g, t.mask, t.other));  // a forward reader, apart
  r.backward_begin = 5;
  r.pool_events = {Taken(t.mask, 0), Given(t.mask, 7)};
  const ScratchSummary s = Rewrite(&r, *t.pool);
  EXPECT_EQ(s.masks_redrawn, 0);
  EXPECT_FALSE(Steps(r, 0)[0].scratch);
}

TEST(ChainScratch, AMaskHeldWhenTheStepEndsStaysInMemory) {
  Tensors t;
  StepRecording r = DropoutBlock(t);
  r.pool_events = {Taken(t.mask, 0), Taken(t.y, 1), Given(t.y, 6)};  // the mask is never given back
  const ScratchSummary s = Rewrite(&r, *t.pool);
  EXPECT_EQ(s.masks_redrawn, 0);
  EXPECT_EQ(Scratch(Steps(r, 0)), std::vector<bool>({false, true, false}));
}

// y given back inside the chain (between the multiply and the add, as if
// the add were its last reader): its life ends with the chain, and it is
// still scratch. Given back and taken again inside the chain, its block is
// left alone.
TEST(ChainScratch, ABlockReusedInsideAChainIsLeftAlone) {
  Tensors t;
  StepRecording freed = DropoutBlock(t);
  freed.pool_events = {Taken(t.y, 1), Given(t.y, 2)};  // between the mul and the add
  Rewrite(&freed, *t.pool);
  EXPECT_TRUE(Steps(freed, 0)[1].scratch);
  StepRecording reused = DropoutBlock(t);
  reused.pool_events = {Taken(t.y, 1), Given(t.y, 2), Taken(t.y, 2), Given(t.y, 6)};
  Rewrite(&reused, *t.pool);
  EXPECT_FALSE(Steps(reused, 0)[1].scratch);
}

}  // namespace
}  // namespace capture
}  // namespace tvlab
