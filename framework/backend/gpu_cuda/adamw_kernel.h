#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ADAMW_KERNEL_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ADAMW_KERNEL_H_

#include <cstdint>

namespace tvlab {

// AdamW on device buffers (torch.optim.AdamW semantics); returns the CUDA
// error code of the launch (0 = success).
int LaunchAdamW(float* param, const float* grad, float* m, float* v, int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, float bias_correction1,
                float bias_correction2_sqrt);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_ADAMW_KERNEL_H_
