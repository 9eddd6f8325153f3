// GpuCudaBackend::PointwiseChain: the chain's steps in launches of up to
// kMaxGpuPointwiseSteps (pointwise_chain_kernel.cu), each step's operands
// and, for a dropout step, its Philox stream and threshold as
// DropoutMask's launch takes them; scratch steps' values stay in each
// thread's own array when the chain fits one launch.

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/backend/gpu_cuda/elementwise_kernels.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/backend/gpu_cuda/pointwise_chain_kernel.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

cuda::GpuPointwiseStep ToGpu(const PointwiseStep& s) {
  TVLAB_CHECK(s.kind != PointwiseStep::Kind::kKeptMask && s.kept == nullptr)
      << "PointwiseChain: gpu_cuda keeps no mask bits (KeepsMaskBits is false)";
  cuda::GpuPointwiseStep g;
  g.kind = static_cast<cuda::GpuPointwiseKind>(static_cast<int>(s.kind));
  g.op = static_cast<int32_t>(s.op);  // BinaryOp and GpuBinary share their order
  g.a = s.a, g.b = s.b, g.c = s.c, g.out = s.out;
  if (s.kind == PointwiseStep::Kind::kDropoutMask) {
    TVLAB_CHECK(s.stream.has_value()) << "PointwiseChain: a dropout step without its stream";
    g.stream = cuda::MakePhiloxStream(*s.stream);
    g.threshold = DropoutThreshold(s.p);
    g.keep_scale = DropoutKeepScale(s.p);
  }
  return g;
}

static_assert(static_cast<int>(PointwiseStep::Kind::kDropoutMask) ==
                  static_cast<int>(cuda::GpuPointwiseKind::kDropoutMask),
              "PointwiseStep::Kind and GpuPointwiseKind list the kinds in one order");
static_assert(static_cast<int>(BinaryOp::kDiv) == static_cast<int>(GpuBinary::kDiv),
              "BinaryOp and GpuBinary list the ops in one order");

// Scratch slots for a chain that runs in one launch: each scratch step's
// out gets the next slot, and the later steps that read that out read the
// slot (until a step writes it to memory again). A longer chain, run in
// pieces, writes every out to memory, which is also right.
void AssignScratchSlots(const std::vector<PointwiseStep>& steps, cuda::GpuPointwiseChain* chain) {
  if (steps.size() > static_cast<size_t>(cuda::kMaxGpuPointwiseSteps)) return;
  std::vector<std::pair<const float*, int32_t>> slots;  // host: out -> slot
  auto slot_of = [&](const float* p) {
    for (const auto& [out, slot] : slots)
      if (out == p && p != nullptr) return slot;
    return int32_t{-1};
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    cuda::GpuPointwiseStep& g = chain->steps[i];
    g.a_slot = slot_of(steps[i].a), g.b_slot = slot_of(steps[i].b), g.c_slot = slot_of(steps[i].c);
    slots.erase(std::remove_if(slots.begin(), slots.end(), [&](const auto& s) { return s.first == steps[i].out; }),
                slots.end());
    if (!steps[i].scratch) continue;
    g.out_slot = static_cast<int32_t>(i);
    slots.emplace_back(steps[i].out, g.out_slot);
  }
}

}  // namespace

void GpuCudaBackend::PointwiseChain(const std::vector<PointwiseStep>& steps, int64_t n) {
  for (size_t begin = 0; begin < steps.size(); begin += cuda::kMaxGpuPointwiseSteps) {
    cuda::GpuPointwiseChain chain;
    const size_t end = std::min(steps.size(), begin + cuda::kMaxGpuPointwiseSteps);
    for (size_t i = begin; i < end; ++i) chain.steps[chain.count++] = ToGpu(steps[i]);
    AssignScratchSlots(steps, &chain);
    const int err = cuda::LaunchPointwiseChain(chain, n);
    TVLAB_CHECK(err == 0) << "pointwise chain kernel: " << cudaGetErrorString(static_cast<cudaError_t>(err));
  }
}

}  // namespace tvlab
