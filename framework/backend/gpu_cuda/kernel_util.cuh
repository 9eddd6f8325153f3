// Device helpers shared by the backend's .cu files (nvcc only): launch
// shapes, deterministic warp/block reductions.
//
// Reductions combine values in a fixed tree (shuffles, then one warp over
// the per-warp results), so for a given blockDim the result is the same on
// every run; nothing here uses atomics.

#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_KERNEL_UTIL_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_KERNEL_UTIL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace tvlab {
namespace cuda_util {

constexpr int kThreads = 256;  // elementwise kernels' block size

// Blocks for a grid-stride loop over n elements (grid-stride loops cover
// any n; the cap keeps gridDim.x within the hardware limit).
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  const int64_t wanted = (n + threads - 1) / threads;
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted < (1 << 20) ? wanted : (1 << 20)));
}

// Threads of a block that owns one row of `cols` values: a multiple of 32,
// about four values per thread, at most 1024.
inline int RowThreads(int64_t cols) {
  int t = 32;
  while (t < 1024 && static_cast<int64_t>(t) * 4 < cols) t *= 2;
  return t;
}

__device__ __forceinline__ int64_t GlobalIndex() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename T, typename Op>
__device__ __forceinline__ T WarpReduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The reduction of every thread's `v` over the block, returned to every
// thread. blockDim.x must be a multiple of 32 (at most 1024); every thread
// of the block must call it (it synchronises). Safe to call repeatedly.
template <typename T, typename Op>
__device__ T BlockReduce(T v, Op op, T identity) {
  __shared__ T per_warp[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = WarpReduce(v, op);
  __syncthreads();  // an earlier call's readers of per_warp are done
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  v = lane < warps ? per_warp[lane] : identity;
  return WarpReduce(v, op);
}

}  // namespace cuda_util
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_KERNEL_UTIL_CUH_
