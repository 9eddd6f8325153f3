#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_POINTWISE_CHAIN_KERNEL_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_POINTWISE_CHAIN_KERNEL_H_

// Backend::PointwiseChain on the GPU: one launch for up to
// kMaxGpuPointwiseSteps steps (gpu_cuda_pointwise.cc launches longer chains
// in pieces), each thread taking 8 consecutive elements through every step
// in order: the elementwise kernels' formulas (elementwise_kernels.cu) and
// the dropout mask's Philox words (dropout_kernel.cu), so the bits equal
// those kernels called one after another. Plain types only (nvcc and the
// host compiler share the header).

#include <cstdint>

#include "framework/backend/gpu_cuda/philox.cuh"

namespace tvlab {
namespace cuda {

constexpr int kMaxGpuPointwiseSteps = 8;

// PointwiseStep::Kind, in its order.
enum class GpuPointwiseKind : int32_t { kBinary, kRelu, kReluBackward, kDropoutMask };

struct GpuPointwiseStep {
  GpuPointwiseKind kind = GpuPointwiseKind::kBinary;
  int32_t op = 0;  // GpuBinary (elementwise_kernels.h)
  const float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  float* out = nullptr;
  PhiloxStream stream = {};  // kDropoutMask
  uint32_t threshold = 0;    // kDropoutMask: DropoutThreshold(p)
  float keep_scale = 0.0f;   // kDropoutMask: 1 / (1 - p)
  // Slots of the thread's scratch (PointwiseStep::scratch) in place of
  // memory: out written there, a, b or c read from there; -1: memory.
  int32_t out_slot = -1, a_slot = -1, b_slot = -1, c_slot = -1;
};

struct GpuPointwiseChain {
  int32_t count = 0;
  GpuPointwiseStep steps[kMaxGpuPointwiseSteps];
};

// Returns the launch's CUDA error code (0 = success).
int LaunchPointwiseChain(const GpuPointwiseChain& chain, int64_t n);

}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_POINTWISE_CHAIN_KERNEL_H_
