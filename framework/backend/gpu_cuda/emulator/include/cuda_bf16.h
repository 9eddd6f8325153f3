#ifndef TVLAB_EMULATED_CUDA_BF16_H_
#define TVLAB_EMULATED_CUDA_BF16_H_

// __nv_bfloat16 on the CPU emulator (../cuda_emulator.h): the bits of a
// bfloat16, converted as CUDA's intrinsics do (round to nearest even).

#include <cstdint>

#include "framework/backend/gpu_cuda/emulator/cuda_emulator.h"
#include "framework/backend/precision.h"

struct __nv_bfloat16 {
  uint16_t bits;
};

inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16{tvlab::Bf16Bits(x)}; }
inline __nv_bfloat16 __float2bfloat16(float x) { return __float2bfloat16_rn(x); }
inline float __bfloat162float(__nv_bfloat16 x) { return tvlab::Bf16ToFloat(x.bits); }

#endif  // TVLAB_EMULATED_CUDA_BF16_H_
