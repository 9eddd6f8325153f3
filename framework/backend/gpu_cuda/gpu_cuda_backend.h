#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_

// GPU backend, built only under --config=cuda. Tensors still live in host
// memory: GEMM runs on cuBLAS (cublasSgemmStridedBatched) and AdamW as a CUDA
// kernel, each staging its operands through device buffers; the other
// kernels are the reference loops. This is the first step of the GPU path
// (device-resident tensors come later); it is tested against the reference
// backend on a machine with a GPU and skips cleanly without one.

#include <string>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

// Whether a CUDA device is usable; `why` explains when not.
bool CudaDeviceAvailable(std::string* why);

class GpuCudaBackend : public ReferenceBackend {
 public:
  GpuCudaBackend();
  ~GpuCudaBackend() override;
  std::string name() const override { return "gpu_cuda"; }
  void Gemm(const GemmDesc& d, const float* a, const float* b, float* c) override;
  void AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
             const AdamWHyper& h) override;

 private:
  void* cublas_ = nullptr;  // cublasHandle_t
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
