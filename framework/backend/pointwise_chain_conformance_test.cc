// Backend::PointwiseChain (kernels.def) on every registered backend but the
// reference: a chain of every step kind, aliasing included, gives the bits
// of the same kernels called one after another, on this backend and on the
// reference (every step kind is exactly defined per element), for sizes
// around cpu_onednn's tile and threading thresholds. Part of
// :backend_conformance_suite, so the emulated gpu_cuda runs it too.

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/backend_conformance_util.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using conformance::BackendsToCompare;
using conformance::Dev;
using conformance::Random;
using conformance::SameBits;

// Random values with some exact zeros (ReLU's edge) and signs mixed.
std::vector<float> WithZeros(int64_t n, uint64_t salt) {
  std::vector<float> v = Random(n, salt);
  for (int64_t i = 0; i < n; i += 5) v[i] = 0.0f;
  return v;
}

// The buffers of one chain: inputs x, res (no zeros: a divisor), dy and six
// outputs.
struct Buffers {
  Buffers(Device d, int64_t n)
      : x(d, WithZeros(n, 1)), res(d, Random(n, 2)), dy(d, Random(n, 3)), mask(d, std::vector<float>(n, 7.0f)),
        y(d, std::vector<float>(n, 7.0f)), out(d, std::vector<float>(n, 7.0f)), r(d, std::vector<float>(n, 7.0f)),
        dx(d, std::vector<float>(n, 7.0f)), q(d, std::vector<float>(n, 7.0f)) {}
  std::vector<std::vector<float>> Outputs() const {
    return {mask.host(), y.host(), out.host(), r.host(), dx.host(), q.host()};
  }
  Dev x, res, dy, mask, y, out, r, dx, q;
};

PointwiseStep Step(PointwiseStep::Kind kind, const float* a, const float* b, const float* c, float* out) {
  PointwiseStep s;
  s.kind = kind, s.a = a, s.b = b, s.c = c, s.out = out;
  return s;
}
PointwiseStep BinaryStep(BinaryOp op, const float* a, const float* b, float* out) {
  PointwiseStep s = Step(PointwiseStep::Kind::kBinary, a, b, nullptr, out);
  s.op = op;
  return s;
}

// Dropout into a residual add, ReLU (of x * mask: signed zeros where the
// mask drops a negative x, ReLU's edge) and its backward, and two binary
// steps that write over their own input (dx = dx / res).
std::vector<PointwiseStep> Chain(const Buffers& b, const RngStream& stream) {
  PointwiseStep mask = Step(PointwiseStep::Kind::kDropoutMask, nullptr, nullptr, nullptr, b.mask.p());
  mask.stream = stream, mask.p = 0.3f;
  return {mask,
          BinaryStep(BinaryOp::kMul, b.x.p(), b.mask.p(), b.y.p()),
          BinaryStep(BinaryOp::kAdd, b.res.p(), b.y.p(), b.out.p()),
          Step(PointwiseStep::Kind::kRelu, b.y.p(), nullptr, nullptr, b.r.p()),
          Step(PointwiseStep::Kind::kReluBackward, b.out.p(), b.r.p(), b.dy.p(), b.dx.p()),
          BinaryStep(BinaryOp::kDiv, b.dx.p(), b.res.p(), b.dx.p()),
          BinaryStep(BinaryOp::kSub, b.dx.p(), b.res.p(), b.q.p())};
}

// The chain's kernels one after another on `be`.
void OneAfterAnother(Backend& be, const Buffers& b, const RngStream& stream, int64_t n) {
  const Shape s = {n};
  be.DropoutMask(stream, 0.3f, b.mask.p(), n);
  be.Binary(BinaryOp::kMul, b.x.p(), s, b.mask.p(), s, b.y.p(), s);
  be.Binary(BinaryOp::kAdd, b.res.p(), s, b.y.p(), s, b.out.p(), s);
  be.Unary(UnaryOp::kRelu, b.y.p(), b.r.p(), n);
  be.UnaryBackward(UnaryOp::kRelu, b.out.p(), b.r.p(), b.dy.p(), b.dx.p(), n);
  be.Binary(BinaryOp::kDiv, b.dx.p(), s, b.res.p(), s, b.dx.p(), s);
  be.Binary(BinaryOp::kSub, b.dx.p(), s, b.res.p(), s, b.q.p(), s);
}

class PointwiseChainConformance : public conformance::BackendBesideReference {};

// Sizes: below, at and across cpu_onednn's 1024-element tile, odd (the last
// dropout word half used), and past its threading threshold for chains that
// draw (2^16).
TEST_P(PointwiseChainConformance, EqualsItsKernelsOneAfterAnother) {
  const RngStream stream(31, RngPurpose::kDropout, 4);
  for (int64_t n : {1, 7, 1023, 1024, 1025, 3001, 70001}) {
    Buffers chained(be_->device(), n), separate(be_->device(), n), reference(Device::kCpu, n);
    be_->PointwiseChain(Chain(chained, stream), n);
    OneAfterAnother(*be_, separate, stream, n);
    OneAfterAnother(*ref_, reference, stream, n);
    const auto got = chained.Outputs(), want = separate.Outputs(), ref = reference.Outputs();
    const char* names[] = {"mask", "y", "out", "relu", "dx", "q"};
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(SameBits(got[i], want[i])) << names[i] << " differs from " << GetParam() << "'s kernels, n " << n;
      EXPECT_TRUE(SameBits(got[i], ref[i])) << names[i] << " differs from the reference's kernels, n " << n;
    }
  }
}

// The same chain with the mask, y, the ReLU and the ReLU backward's dx
// marked scratch (after the chain no one would read them; dx is written
// again by the division, which reads it first): out, dx and q keep their
// bits. cpu_onednn keeps scratch outputs in a tile of its own and gpu_cuda
// in each thread's own array, so there their memory must stay as it was.
TEST_P(PointwiseChainConformance, ScratchStepsChangeNoOtherOutput) {
  const RngStream stream(31, RngPurpose::kDropout, 4);
  for (int64_t n : {1, 1025, 70001}) {
    Buffers plain(be_->device(), n), scratched(be_->device(), n);
    be_->PointwiseChain(Chain(plain, stream), n);
    std::vector<PointwiseStep> chain = Chain(scratched, stream);
    for (int step : {0, 1, 3, 4}) chain[step].scratch = true;
    be_->PointwiseChain(chain, n);
    const auto got = scratched.Outputs(), want = plain.Outputs();
    const char* names[] = {"mask", "y", "out", "relu", "dx", "q"};
    for (size_t i : {2, 4, 5}) EXPECT_TRUE(SameBits(got[i], want[i])) << names[i] << " changed, n " << n;
    if (GetParam() != "cpu_onednn" && GetParam() != "gpu_cuda") continue;
    for (size_t i : {0, 1, 3})
      EXPECT_TRUE(SameBits(got[i], std::vector<float>(n, 7.0f))) << names[i] << " was written, n " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(AllBackends, PointwiseChainConformance, ::testing::ValuesIn(BackendsToCompare()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace tvlab
