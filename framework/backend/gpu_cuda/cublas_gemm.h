#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_CUBLAS_GEMM_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_CUBLAS_GEMM_H_

// The GPU backend's GEMM in each precision (precision.h), on cuBLAS:
//   fp32: cublasSgemmStridedBatched (no tensor-core down-conversion);
//   tf32: cublasGemmStridedBatchedEx, fp32 operands and output, compute type
//         CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores round the operands to
//         TF32 and accumulate in fp32);
//   bf16: both operands converted to __nv_bfloat16 in reused device scratch
//         buffers (bf16_convert.cu), then cublasGemmStridedBatchedEx with
//         CUDA_R_16BF inputs, a CUDA_R_32F output and CUBLAS_COMPUTE_32F.
// Everything is queued on the handle's stream; nothing is copied to the host.

#include <cstddef>

#include "framework/backend/backend.h"

namespace tvlab {

// Device buffers for the bf16 copies of a GEMM's two operands. They grow to
// the largest operand seen and are then reused (no per-call allocation);
// freed with the object. Not thread-safe: one per backend, used on one stream.
class Bf16Scratch {
 public:
  Bf16Scratch() = default;
  Bf16Scratch(const Bf16Scratch&) = delete;
  Bf16Scratch& operator=(const Bf16Scratch&) = delete;
  ~Bf16Scratch();
  // Room for `elements` bf16 values in buffer `which` (0: A, 1: B).
  void* Get(int which, size_t elements);

 private:
  void* ptr_[2] = {nullptr, nullptr};
  size_t capacity_[2] = {0, 0};
};

// C = alpha op(A) op(B) + beta C as GemmDesc describes (row-major), in
// d.precision, on device pointers. `cublas` is a cublasHandle_t.
void CublasGemm(void* cublas, const GemmDesc& d, const float* a, const float* b, float* c,
                Bf16Scratch* scratch);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_CUBLAS_GEMM_H_
