#include "framework/backend/gpu_cuda/fill_kernel.h"

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace {

__global__ void FillKernel(float* dst, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = value;
}

__global__ void FillRowsKernel(float* dst, int64_t n, int64_t cols, const float* row) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = row[i % cols];
}

int Blocks(int64_t n, int threads) {
  const int64_t wanted = (n + threads - 1) / threads;
  return static_cast<int>(wanted < 65535 ? wanted : 65535);
}

}  // namespace

int LaunchFill(float* dst, int64_t n, float value) {
  if (n <= 0) return 0;
  const int threads = 256;
  TVLAB_LAUNCH(Blocks(n, threads), threads, 0, 0, FillKernel)(dst, n, value);
  return static_cast<int>(cudaGetLastError());
}

int LaunchFillRows(float* dst, int64_t rows, int64_t cols, const float* row) {
  const int64_t n = rows * cols;
  if (n <= 0) return 0;
  const int threads = 256;
  TVLAB_LAUNCH(Blocks(n, threads), threads, 0, 0, FillRowsKernel)(dst, n, cols, row);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
