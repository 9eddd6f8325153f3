#include "framework/backend/gpu_cuda/cublas_gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/bf16_convert.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// The elements an operand of `batch` matrices of `size` elements spans at
// `stride` (0: one matrix shared by the batch).
int64_t OperandSpan(int64_t batch, int64_t stride, int64_t size) {
  return stride == 0 || batch == 0 ? size : (batch - 1) * stride + size;
}

}  // namespace

Bf16Scratch::~Bf16Scratch() {
  for (void* p : ptr_)
    if (p != nullptr) cudaFree(p);
}

void* Bf16Scratch::Get(int which, size_t elements) {
  if (elements > capacity_[which]) {
    if (ptr_[which] != nullptr) TVLAB_CHECK(cudaFree(ptr_[which]) == cudaSuccess);
    ptr_[which] = nullptr;
    const cudaError_t err = cudaMalloc(&ptr_[which], elements * 2);
    TVLAB_CHECK(err == cudaSuccess) << "bf16 GEMM scratch of " << elements * 2
                                    << " bytes: " << cudaGetErrorString(err);
    capacity_[which] = elements;
  }
  return ptr_[which];
}

void CublasGemm(void* cublas, const GemmDesc& d, const float* a, const float* b, float* c,
                Bf16Scratch* scratch) {
  auto handle = static_cast<cublasHandle_t>(cublas);
  // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T,
  // so pass B first and swap m and n.
  const cublasOperation_t op_b = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(d.n), n = static_cast<int>(d.m), k = static_cast<int>(d.k);
  const int ldb = static_cast<int>(d.trans_b ? d.k : d.n);
  const int lda = static_cast<int>(d.trans_a ? d.m : d.k);
  const int ldc = static_cast<int>(d.n);
  const int batch = static_cast<int>(d.batch);
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  switch (d.precision) {
    case Precision::kFp32:
      status = cublasSgemmStridedBatched(handle, op_b, op_a, m, n, k, &d.alpha, b, ldb,
                                         d.stride_b, a, lda, d.stride_a, &d.beta, c, ldc,
                                         d.stride_c, batch);
      break;
    case Precision::kTf32:
      status = cublasGemmStridedBatchedEx(handle, op_b, op_a, m, n, k, &d.alpha, b, CUDA_R_32F,
                                          ldb, d.stride_b, a, CUDA_R_32F, lda, d.stride_a,
                                          &d.beta, c, CUDA_R_32F, ldc, d.stride_c, batch,
                                          CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
      break;
    case Precision::kBf16: {
      // (B, m, k) and (B, k, n) operands, same layout and strides, 2 bytes each.
      const int64_t a_span = OperandSpan(d.batch, d.stride_a, d.m * d.k);
      const int64_t b_span = OperandSpan(d.batch, d.stride_b, d.k * d.n);
      void* a16 = scratch->Get(0, static_cast<size_t>(a_span));
      void* b16 = scratch->Get(1, static_cast<size_t>(b_span));
      cudaStream_t stream = nullptr;  // the GEMM's stream: conversions run before it
      TVLAB_CHECK(cublasGetStream(handle, &stream) == CUBLAS_STATUS_SUCCESS);
      for (int err : {LaunchFloatToBf16(a, a16, a_span, stream),
                      LaunchFloatToBf16(b, b16, b_span, stream)})
        TVLAB_CHECK(err == 0) << "bf16 conversion: "
                              << cudaGetErrorString(static_cast<cudaError_t>(err));
      status = cublasGemmStridedBatchedEx(handle, op_b, op_a, m, n, k, &d.alpha, b16, CUDA_R_16BF,
                                          ldb, d.stride_b, a16, CUDA_R_16BF, lda, d.stride_a,
                                          &d.beta, c, CUDA_R_32F, ldc, d.stride_c, batch,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      break;
    }
  }
  TVLAB_CHECK(status == CUBLAS_STATUS_SUCCESS)
      << "cuBLAS " << PrecisionName(d.precision) << " GEMM: " << cublasGetStatusString(status);
}

}  // namespace tvlab
