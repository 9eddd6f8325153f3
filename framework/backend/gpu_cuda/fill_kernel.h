#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FILL_KERNEL_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FILL_KERNEL_H_

#include <cstdint>

namespace tvlab {

// dst[i] = value for i < n, on the device; returns the CUDA error code of the
// launch (0 = success). cudaMemset cannot write a float pattern.
int LaunchFill(float* dst, int64_t n, float value);

// dst (rows, cols) = row (cols) in every row, on the device; returns the
// launch's CUDA error code (0 = success).
int LaunchFillRows(float* dst, int64_t rows, int64_t cols, const float* row);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FILL_KERNEL_H_
