// Data movement: permutation (head split/merge), strided 2D copies (slices,
// concatenation), embedding gather and its scatter-add backward, and the
// per-row argmax (accuracy, greedy decoding).

#include <cuda_runtime.h>

#include <climits>

#include "framework/backend/gpu_cuda/index_kernels.h"
#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace {

using cuda_util::GlobalIndex;
using cuda_util::GridFor;
using cuda_util::GridStride;
using cuda_util::kThreads;
using cuda_util::RowThreads;

__global__ void PermuteKernel(const float* x, PermuteIndex ix, int64_t n, float* y) {
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    int64_t rest = i, src = 0;
    for (int d = ix.rank - 1; d >= 0; --d) {
      src += (rest % ix.out_size[d]) * ix.src_stride[d];
      rest /= ix.out_size[d];
    }
    y[i] = x[src];
  }
}

__global__ void Copy2DKernel(const float* src, int64_t src_stride, float* dst,
                             int64_t dst_stride, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    const int64_t r = i / cols, c = i % cols;
    dst[r * dst_stride + c] = src[r * src_stride + c];
  }
}

__global__ void GatherKernel(const float* table, int64_t cols, const int32_t* ids, int64_t n,
                             float* out) {
  const int64_t total = n * cols;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t row = i / cols, c = i % cols;
    out[i] = table[static_cast<int64_t>(ids[row]) * cols + c];
  }
}

__global__ void ScatterAddKernel(const float* d_out, int64_t cols, const int32_t* ids,
                                 int64_t n, float* d_table) {
  const int64_t total = n * cols;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) {
    const int64_t row = i / cols, c = i % cols;
    atomicAdd(d_table + static_cast<int64_t>(ids[row]) * cols + c, d_out[i]);
  }
}

// (value, index) of the larger value; of equal values, the smaller index.
__device__ __forceinline__ void Better(float& value, int64_t& index, float other_value,
                                       int64_t other_index) {
  if (other_value > value || (other_value == value && other_index < index)) {
    value = other_value;
    index = other_index;
  }
}

// One block per row: each thread keeps the first maximum of its strided
// values (ascending, so ties keep the earliest), then the block combines.
__global__ void ArgMaxRowsKernel(const float* x, int64_t cols, int32_t* out) {
  __shared__ float warp_value[32];
  __shared__ int64_t warp_index[32];
  const float* xr = x + blockIdx.x * cols;
  float value = -INFINITY;
  int64_t index = LLONG_MAX;  // a thread without values loses every tie
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    if (index == LLONG_MAX || xr[c] > value) value = xr[c], index = c;
  for (int offset = 16; offset > 0; offset >>= 1)
    Better(value, index, __shfl_xor_sync(0xffffffffu, value, offset),
           __shfl_xor_sync(0xffffffffu, index, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_value[warp] = value, warp_index[warp] = index;
  __syncthreads();
  if (warp == 0) {
    value = lane < (blockDim.x >> 5) ? warp_value[lane] : -INFINITY;
    index = lane < (blockDim.x >> 5) ? warp_index[lane] : LLONG_MAX;
    for (int offset = 16; offset > 0; offset >>= 1)
      Better(value, index, __shfl_xor_sync(0xffffffffu, value, offset),
             __shfl_xor_sync(0xffffffffu, index, offset));
    if (lane == 0) out[blockIdx.x] = static_cast<int32_t>(index == LLONG_MAX ? 0 : index);
  }
}

}  // namespace

int LaunchPermute(const float* x, const PermuteIndex& index, int64_t n, float* y) {
  if (n <= 0) return 0;
  TVLAB_LAUNCH(GridFor(n), kThreads, 0, 0, PermuteKernel)(x, index, n, y);
  return static_cast<int>(cudaGetLastError());
}

int LaunchCopy2D(const float* src, int64_t src_stride, float* dst, int64_t dst_stride,
                 int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  const size_t width = static_cast<size_t>(cols) * sizeof(float);
  if (rows == 1)
    return static_cast<int>(cudaMemcpyAsync(dst, src, width, cudaMemcpyDeviceToDevice, 0));
  if (src_stride >= cols && dst_stride >= cols) {
    return static_cast<int>(cudaMemcpy2DAsync(dst, dst_stride * sizeof(float), src,
                                              src_stride * sizeof(float), width,
                                              static_cast<size_t>(rows),
                                              cudaMemcpyDeviceToDevice, 0));
  }
  TVLAB_LAUNCH(GridFor(rows * cols), kThreads, 0, 0, Copy2DKernel)(src, src_stride, dst, dst_stride,
                                                                    rows, cols);
  return static_cast<int>(cudaGetLastError());
}

int LaunchGather(const float* table, int64_t cols, const int32_t* ids, int64_t n, float* out) {
  if (n <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(GridFor(n * cols), kThreads, 0, 0, GatherKernel)(table, cols, ids, n, out);
  return static_cast<int>(cudaGetLastError());
}

int LaunchScatterAdd(const float* d_out, int64_t cols, const int32_t* ids, int64_t n,
                     float* d_table) {
  if (n <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(GridFor(n * cols), kThreads, 0, 0, ScatterAddKernel)(d_out, cols, ids, n, d_table);
  return static_cast<int>(cudaGetLastError());
}

int LaunchArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  if (rows <= 0) return 0;
  TVLAB_LAUNCH(static_cast<unsigned>(rows), RowThreads(cols), 0, 0, ArgMaxRowsKernel)(x, cols, out);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
