// GpuCudaBackend's SGD and Lion over many tensors: one launch per tensor
// (optimizer_kernels.cu), each launch's status checked.

#include <cuda_runtime.h>

#include <vector>

#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/backend/gpu_cuda/optimizer_kernels.h"
#include "framework/core/check.h"

namespace tvlab {

void GpuCudaBackend::SgdMany(const std::vector<AdamWTensor>& tensors, const SgdHyper& h) {
  for (const AdamWTensor& t : tensors) {
    const int err = LaunchSgd(t.param, t.grad, t.m, t.n, h.lr, h.momentum, h.nesterov, t.weight_decay);
    TVLAB_CHECK(err == 0) << "SGD kernel launch: " << cudaGetErrorString(static_cast<cudaError_t>(err));
  }
}

void GpuCudaBackend::LionMany(const std::vector<AdamWTensor>& tensors, const LionHyper& h) {
  for (const AdamWTensor& t : tensors) {
    const int err = LaunchLion(t.param, t.grad, t.m, t.n, h.lr, h.beta1, h.beta2, t.weight_decay);
    TVLAB_CHECK(err == 0) << "Lion kernel launch: " << cudaGetErrorString(static_cast<cudaError_t>(err));
  }
}

}  // namespace tvlab
