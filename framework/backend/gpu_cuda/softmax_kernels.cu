// Row-wise softmax: one block per row (cuda_util::RowThreads threads), three
// passes over the row (max, sum of exp, write), each a strided loop whose
// reads are coalesced across the block. The rows of attention (cols = keys)
// and of a vocabulary (cols = V) both fit this shape.

#include <cuda_runtime.h>

#include <cmath>

#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/softmax_kernels.h"

namespace tvlab {
namespace {

using cuda_util::BlockReduce;
using cuda_util::MaxOp;
using cuda_util::RowThreads;
using cuda_util::SumOp;

__global__ void SoftmaxKernel(const float* x, float* y, int64_t cols) {
  const float* xr = x + blockIdx.x * cols;  // (cols) of row blockIdx.x
  float* yr = y + blockIdx.x * cols;
  float max = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) max = fmaxf(max, xr[c]);
  max = BlockReduce(max, MaxOp(), -INFINITY);
  if (max == -INFINITY) {  // every key masked: zeros, not NaN (the whole block agrees)
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - max);
  sum = BlockReduce(sum, SumOp(), 0.0f);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - max) / sum;
}

__global__ void SoftmaxBackwardKernel(const float* y, const float* dy, float* dx, int64_t cols) {
  const int64_t offset = blockIdx.x * cols;
  float dot = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dot += y[offset + c] * dy[offset + c];
  dot = BlockReduce(dot, SumOp(), 0.0f);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dx[offset + c] = y[offset + c] * (dy[offset + c] - dot);
}

}  // namespace

int LaunchSoftmax(const float* x, float* y, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(static_cast<unsigned>(rows), RowThreads(cols), 0, 0, SoftmaxKernel)(x, y, cols);
  return static_cast<int>(cudaGetLastError());
}

int LaunchSoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                          int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(static_cast<unsigned>(rows), RowThreads(cols), 0, 0, SoftmaxBackwardKernel)(
      y, dy, dx, cols);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
