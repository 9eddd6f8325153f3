// SGD and Lion updates, one thread per element. Compiled by nvcc (see
// BUILD.bazel) and by the emulator.

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/optimizer_kernels.h"

namespace tvlab {
namespace {

__global__ void SgdKernel(float* param, const float* grad, float* buf, int64_t n, float lr, float momentum,
                          bool nesterov, float weight_decay) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float g = grad[i] + weight_decay * param[i];
  if (momentum != 0.0f) {
    const float b = momentum * buf[i] + g;
    buf[i] = b;
    g = nesterov ? g + momentum * b : b;
  }
  param[i] = param[i] - lr * g;
}

__global__ void LionKernel(float* param, const float* grad, float* m, int64_t n, float lr, float beta1,
                           float beta2, float decay) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float c = beta1 * m[i] + (1.0f - beta1) * grad[i];
  const float sign = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
  param[i] = param[i] * decay - lr * sign;
  m[i] = beta2 * m[i] + (1.0f - beta2) * grad[i];
}

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

int LaunchSgd(float* param, const float* grad, float* buf, int64_t n, float lr, float momentum,
              bool nesterov, float weight_decay) {
  if (n == 0) return 0;
  TVLAB_LAUNCH(Blocks(n), kThreads, 0, 0, SgdKernel)(param, grad, buf, n, lr, momentum, nesterov, weight_decay);
  return static_cast<int>(cudaGetLastError());
}

int LaunchLion(float* param, const float* grad, float* m, int64_t n, float lr, float beta1, float beta2,
               float weight_decay) {
  if (n == 0) return 0;
  TVLAB_LAUNCH(Blocks(n), kThreads, 0, 0, LionKernel)(param, grad, m, n, lr, beta1, beta2,
                                                      1.0f - lr * weight_decay);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
