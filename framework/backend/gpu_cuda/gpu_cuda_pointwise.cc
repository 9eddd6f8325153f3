// GpuCudaBackend::PointwiseChain: the chain's steps in launches of up to
// kMaxGpuPointwiseSteps (pointwise_chain_kernel.cu), each step's operands
// and, for a dropout step, its Philox stream and threshold as
// DropoutMask's launch takes them.

#include <cuda_runtime.h>

#include <algorithm>

#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/backend/gpu_cuda/elementwise_kernels.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/backend/gpu_cuda/pointwise_chain_kernel.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

cuda::GpuPointwiseStep ToGpu(const PointwiseStep& s) {
  cuda::GpuPointwiseStep g;
  g.kind = static_cast<cuda::GpuPointwiseKind>(static_cast<int>(s.kind));
  g.op = static_cast<int32_t>(s.op);  // BinaryOp and GpuBinary share their order
  g.a = s.a, g.b = s.b, g.c = s.c, g.out = s.out;
  if (s.kind == PointwiseStep::Kind::kDropoutMask) {
    TVLAB_CHECK(s.stream.has_value()) << "PointwiseChain: a dropout step without its stream";
    g.stream = cuda::MakePhiloxStream(*s.stream);
    g.threshold = cuda::DropoutThreshold(s.p);
    g.keep_scale = 1.0f / (1.0f - s.p);
  }
  return g;
}

static_assert(static_cast<int>(PointwiseStep::Kind::kDropoutMask) ==
                  static_cast<int>(cuda::GpuPointwiseKind::kDropoutMask),
              "PointwiseStep::Kind and GpuPointwiseKind list the kinds in one order");
static_assert(static_cast<int>(BinaryOp::kDiv) == static_cast<int>(GpuBinary::kDiv),
              "BinaryOp and GpuBinary list the ops in one order");

}  // namespace

void GpuCudaBackend::PointwiseChain(const std::vector<PointwiseStep>& steps, int64_t n) {
  for (size_t begin = 0; begin < steps.size(); begin += cuda::kMaxGpuPointwiseSteps) {
    cuda::GpuPointwiseChain chain;
    const size_t end = std::min(steps.size(), begin + cuda::kMaxGpuPointwiseSteps);
    for (size_t i = begin; i < end; ++i) chain.steps[chain.count++] = ToGpu(steps[i]);
    const int err = cuda::LaunchPointwiseChain(chain, n);
    TVLAB_CHECK(err == 0) << "pointwise chain kernel: " << cudaGetErrorString(static_cast<cudaError_t>(err));
  }
}

}  // namespace tvlab
