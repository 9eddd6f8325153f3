#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_

// GPU backend, built only under --config=cuda. Tensors live in device memory
// (Device::kCuda, cudaMalloc behind the caching allocator; copies and fills
// through cudaMemcpy and a fill kernel). Part 1 of the GPU path implements
// GEMM (cuBLAS, cublasSgemmStridedBatched, on device pointers) and AdamW (a
// CUDA kernel); it declares only those, so validation refuses
// `runtime.backend: "gpu_cuda"` for a model, naming the kernels still
// missing, rather than falling back to host loops (GPU part 2 adds them).
// Its kernels are tested against the reference backend on a machine with a
// GPU and skip cleanly without one.

#include <string>

#include "framework/backend/backend.h"

namespace tvlab {

// Whether a CUDA device is usable; `why` explains when not.
bool CudaDeviceAvailable(std::string* why);

class GpuCudaBackend : public Backend {
 public:
  GpuCudaBackend();
  ~GpuCudaBackend() override;
  std::string name() const override { return "gpu_cuda"; }
  Device device() const override { return Device::kCuda; }
  bool Implements(Kernel kernel) const override {
    return kernel == Kernel::kGemm || kernel == Kernel::kAdamW;
  }
  void Gemm(const GemmDesc& d, const float* a, const float* b, float* c) override;
  void AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
             const AdamWHyper& h) override;

 private:
  void* cublas_ = nullptr;  // cublasHandle_t
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
