// AdamW update, one thread per element. Compiled by nvcc (see BUILD.bazel).

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/adamw_kernel.h"
#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace {

__global__ void AdamWKernel(float* param, const float* grad, float* m, float* v, int64_t n,
                            float lr, float beta1, float beta2, float eps, float weight_decay,
                            float bias_correction1, float bias_correction2_sqrt) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float p = param[i] * (1.0f - lr * weight_decay);
  float mi = beta1 * m[i] + (1.0f - beta1) * grad[i];
  float vi = beta2 * v[i] + (1.0f - beta2) * grad[i] * grad[i];
  m[i] = mi;
  v[i] = vi;
  float denom = sqrtf(vi) / bias_correction2_sqrt + eps;
  param[i] = p - (lr / bias_correction1) * mi / denom;
}

}  // namespace

int LaunchAdamW(float* param, const float* grad, float* m, float* v, int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, float bias_correction1,
                float bias_correction2_sqrt) {
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  TVLAB_LAUNCH(static_cast<unsigned>(blocks), threads, 0, 0, AdamWKernel)(
      param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, bias_correction1,
      bias_correction2_sqrt);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
