#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_BF16_CONVERT_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_BF16_CONVERT_H_

#include <cstdint>

namespace tvlab {

// dst[i] = src[i] rounded to bfloat16 (nearest, ties to even: the rounding
// of precision.h's Bf16Bits), for i < n, on the device. dst holds n 2-byte
// __nv_bfloat16 values. Runs on `stream` (a cudaStream_t; null: the
// default stream), the stream of the GEMM that reads dst. Returns the CUDA
// error code of the launch (0 = success).
int LaunchFloatToBf16(const float* src, void* dst, int64_t n, void* stream);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_BF16_CONVERT_H_
