#include "framework/backend/gpu_cuda/bf16_convert.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace {

__global__ void FloatToBf16Kernel(const float* src, __nv_bfloat16* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

}  // namespace

int LaunchFloatToBf16(const float* src, void* dst, int64_t n, void* stream) {
  if (n <= 0) return 0;
  const int threads = 256;
  const int64_t wanted = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
  TVLAB_LAUNCH(blocks, threads, 0, static_cast<cudaStream_t>(stream), FloatToBf16Kernel)(
      src, static_cast<__nv_bfloat16*>(dst), n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
