#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_OPTIMIZER_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_OPTIMIZER_KERNELS_H_

#include <cstdint>

namespace tvlab {

// SGD on one tensor's device buffers (kernels.def's SgdMany formula; `buf`
// unused, may be null, when momentum is 0); returns the CUDA error code of
// the launch (0 = success).
int LaunchSgd(float* param, const float* grad, float* buf, int64_t n, float lr, float momentum,
              bool nesterov, float weight_decay);

// Lion on one tensor's device buffers (kernels.def's LionMany formula).
int LaunchLion(float* param, const float* grad, float* m, int64_t n, float lr, float beta1, float beta2,
               float weight_decay);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_OPTIMIZER_KERNELS_H_
