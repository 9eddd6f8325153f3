#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_

// GPU backend, built only under --config=cuda. Tensors live in device memory
// (Device::kCuda, cudaMalloc behind the caching allocator; copies and fills
// through cudaMemcpy and a fill kernel). GEMM goes through cuBLAS
// (cublas_gemm.cc: cublasSgemmStridedBatched, or cublasGemmStridedBatchedEx
// for runtime.precision tf32/bf16); every other kernel is CUDA:
// gpu_cuda/*_kernels.cu (docs/architecture.md, "The GPU backend's kernels"),
// the dropout mask (Philox on the device, philox.cuh: the CPU backends' mask
// bit for bit) and fused attention forward and backward (flash-attention
// style, fused_attention_*.cuh; docs/gpu.md). All run on the default
// stream, the one stream of this backend (cuBLAS and the copies use it too),
// with the launch status checked. No kernel reads a value back to the host;
// reductions that need scratch take it from the caching allocator.
//
// Debugging: TVLAB_CUDA_SYNC=1 in the environment synchronises after every
// kernel, so an asynchronous fault is reported by the kernel that caused it.
// Its kernels are tested against the reference backend on a machine with a
// GPU (backend_conformance_test, gpu_cuda_kernels_test, gpu_cuda_backend_test)
// and skip cleanly without one. In every build the same sources also run on
// the CPU under an emulator of CUDA (gpu_cuda/emulator/: the *_emulated_*
// tests and tests:gpu_cuda_model_emulated_test), and philox.cuh against
// RngStream (philox_host_test). Compiled and reviewed; not yet run on a GPU.

#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/cublas_gemm.h"

namespace tvlab {

// Whether a CUDA device is usable; `why` explains when not.
bool CudaDeviceAvailable(std::string* why);

class GpuCudaBackend : public Backend {
 public:
  GpuCudaBackend();
  ~GpuCudaBackend() override;
  std::string name() const override { return "gpu_cuda"; }
  Device device() const override { return Device::kCuda; }
  // cudaGetDeviceProperties' name of this process's GPU.
  std::string device_model() const override;

  // Every kernel of kernels.def: GEMM on cuBLAS (gpu_cuda_backend.cc), the
  // dropout mask by Philox on the device (gpu_cuda_dropout.cc: the CPU
  // backends' mask bit for bit), the flash-attention-style fused attention
  // (gpu_cuda_attention.cc), and the host side of the other kernels
  // (gpu_cuda_ops.cc: shapes, scratch, one launch each of the kernels in
  // gpu_cuda/*_kernels.cu).
#include "framework/backend/implement_every_kernel.inc"
  // The bias written into every row of c, then the GEMM with beta 1: the
  // bias enters in cuBLAS's epilogue (which reads c anyway) instead of a
  // second kernel's pass over c.
  TVLAB_OVERRIDE_KERNEL(GemmBias);
  // One launch for a chain of up to 8 elementwise steps
  // (gpu_cuda_pointwise.cc), instead of one per step.
  TVLAB_OVERRIDE_KERNEL(PointwiseChain);
  // NormalizeBackward's launch adding the addend as it writes dx, instead
  // of a second kernel's pass.
  TVLAB_OVERRIDE_KERNEL(NormalizeBackwardAdd);

 private:
  void* cublas_ = nullptr;  // cublasHandle_t
  Bf16Scratch bf16_scratch_;  // bf16 copies of GEMM operands (cublas_gemm.h)
};

// fp32, tf32 and bf16 on GPUs of compute capability 8.0 or later (tensor
// cores with TF32 and bf16); fp32 only before (cublas_gemm.h). Asks the
// driver for this process's GPU (no context, no cuBLAS handle).
PrecisionSupport GpuCudaPrecisionSupport(Precision precision);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GPU_CUDA_BACKEND_H_
