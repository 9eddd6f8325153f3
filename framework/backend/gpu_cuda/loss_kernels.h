#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_LOSS_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_LOSS_KERNELS_H_

// Launchers of the cross-entropy forward and backward (Backend::CrossEntropy,
// CrossEntropyBackward), logits (rows, cols). Everything stays on the device:
// the mean loss and the backward's scale are computed by single-block
// kernels, never read back to the host. They return the CUDA error code of
// their launches (0 = success).

#include <cstddef>
#include <cstdint>

namespace tvlab {

// loss (rows), probs (rows, cols) = softmax(logits), mean_loss (1) = sum of
// loss (in double) / max(counted rows, 1). A row whose target is
// ignore_index has loss 0; a target outside [0, cols) gives a NaN loss (so
// the run stops on a non-finite loss instead of reading out of bounds).
int LaunchCrossEntropy(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                       int32_t ignore_index, float label_smoothing, float* loss, float* probs,
                       float* mean_loss);

// dlogits = dloss[0] / counted * (probs - smoothed one-hot), zero rows for
// ignore_index. `scratch`: CrossEntropyBackwardScratchBytes() of device memory.
size_t CrossEntropyBackwardScratchBytes();
int LaunchCrossEntropyBackward(const float* probs, const int32_t* targets, int64_t rows,
                               int64_t cols, int32_t ignore_index, float label_smoothing,
                               const float* dloss, float* dlogits, void* scratch);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_LOSS_KERNELS_H_
