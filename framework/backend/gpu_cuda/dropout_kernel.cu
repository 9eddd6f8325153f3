// The dropout mask, one thread per 4 words: they decide 8 consecutive
// elements (two 16-bit halves per word), so each thread draws one Philox
// block (two when the stream's word offset is not a multiple of 4) and
// writes mask[8t .. 8t + 7]. Compiled by nvcc (BUILD.bazel).

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace cuda {
namespace {

__global__ void DropoutMaskKernel(PhiloxStream stream, uint32_t threshold, float keep_scale,
                                  float* mask, int64_t n) {
  const int64_t block = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t first = block * 8;  // elements [first, first + 8)
  if (first >= n) return;
  const PhiloxBlock words = PhiloxStreamFourWords(stream, static_cast<uint64_t>(block));
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    if (first + e >= n) break;
    const uint32_t half = (words.w[e >> 1] >> ((e & 1) * 16)) & 0xFFFFu;
    mask[first + e] = half < threshold ? 0.0f : keep_scale;
  }
}

}  // namespace

int LaunchDropoutMask(const PhiloxStream& stream, uint32_t threshold, float keep_scale,
                      float* mask, int64_t n) {
  if (n <= 0) return 0;
  const int threads = 256;
  const int64_t philox_blocks = (n + 7) / 8;
  const int64_t grid = (philox_blocks + threads - 1) / threads;
  TVLAB_LAUNCH(static_cast<unsigned>(grid), threads, 0, 0, DropoutMaskKernel)(
      stream, threshold, keep_scale, mask, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace cuda
}  // namespace tvlab
