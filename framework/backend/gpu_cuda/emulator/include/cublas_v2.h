#ifndef TVLAB_EMULATED_CUBLAS_V2_H_
#define TVLAB_EMULATED_CUBLAS_V2_H_

// The cuBLAS calls gpu_cuda makes (cublas_gemm.cc), on the CPU emulator
// (../cuda_emulator.h): column-major strided-batched GEMM as cuBLAS
// documents it, C = alpha op(A) op(B) + beta C with op(A) m x k, op(B)
// k x n, C m x n, each matrix at its leading dimension and batch stride.
// Arguments cuBLAS rejects (negative sizes, a leading dimension below the
// rows it stores) return CUBLAS_STATUS_INVALID_VALUE; an operand that
// reaches outside its device allocation returns
// CUBLAS_STATUS_EXECUTION_FAILED (a real GPU reads garbage or faults).
// Sums run in double and round once to float; TF32 and bf16 operands are
// rounded first (precision.h), so the products are those of the tensor
// cores, up to summation order.

#include "framework/backend/gpu_cuda/emulator/include/cuda_runtime.h"

struct cublasContext;
using cublasHandle_t = cublasContext*;

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};

enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };

enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
using cudaDataType_t = cudaDataType;

enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };

enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream);
const char* cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch);

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* a, cudaDataType a_type,
                                          int lda, long long stride_a, const void* b,
                                          cudaDataType b_type, int ldb, long long stride_b,
                                          const void* beta, void* c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo);

#endif  // TVLAB_EMULATED_CUBLAS_V2_H_
