#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_DROPOUT_KERNEL_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_DROPOUT_KERNEL_H_

// The inverted-dropout mask on the GPU (Backend::DropoutMask), drawn with
// philox.cuh so that it equals the CPU backends' mask bit for bit.

#include <cstdint>

#include "framework/backend/gpu_cuda/philox.cuh"
#include "framework/core/rng.h"

namespace tvlab {
namespace cuda {

// The kernel-side copy of `stream` (plain data).
inline PhiloxStream MakePhiloxStream(const RngStream& stream) {
  const auto key = stream.key();
  return PhiloxStream{key[0], key[1], stream.purpose_word(),
                      static_cast<uint32_t>(stream.step()),
                      static_cast<uint32_t>(stream.step() >> 32), stream.word_offset()};
}

// mask (n) on the device: mask[i] = DropoutFactor(stream, i, threshold,
// keep_scale). Returns the launch's CUDA error code (0 = success).
int LaunchDropoutMask(const PhiloxStream& stream, uint32_t threshold, float keep_scale,
                      float* mask, int64_t n);

}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_DROPOUT_KERNEL_H_
