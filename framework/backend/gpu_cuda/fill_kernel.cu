#include "framework/backend/gpu_cuda/fill_kernel.h"
#include "framework/backend/gpu_cuda/launch.cuh"

#include <cuda_runtime.h>

namespace tvlab {
namespace {

__global__ void FillKernel(float* dst, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

}  // namespace

int LaunchFill(float* dst, int64_t n, float value) {
  if (n <= 0) return 0;
  const int threads = 256;
  const int64_t wanted = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
  TVLAB_LAUNCH(blocks, threads, 0, 0, FillKernel)(dst, n, value);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
