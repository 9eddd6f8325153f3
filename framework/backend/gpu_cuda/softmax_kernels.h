#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_SOFTMAX_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_SOFTMAX_KERNELS_H_

// Launchers of the row-wise softmax and its backward (Backend::Softmax,
// SoftmaxBackward): one block per row of `cols` values. They return the
// CUDA error code of the launch (0 = success).

#include <cstdint>

namespace tvlab {

// y = softmax(x) per row, max-subtracted; a row that is all -inf gives zeros.
int LaunchSoftmax(const float* x, float* y, int64_t rows, int64_t cols);
// dx = y * (dy - sum(dy * y)) per row.
int LaunchSoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                          int64_t cols);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_SOFTMAX_KERNELS_H_
