// The cuBLAS GEMMs of include/cublas_v2.h on the CPU emulator.

#include <cstdint>
#include <string>

#include "framework/backend/gpu_cuda/emulator/cuda_emulator.h"
#include "framework/backend/gpu_cuda/emulator/include/cublas_v2.h"
#include "framework/backend/gpu_cuda/emulator/include/cuda_bf16.h"
#include "framework/backend/precision.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

// One stored column-major operand: `rows` x `cols` at leading dimension ld.
struct Operand {
  const void* data;
  cudaDataType type;
  int rows, cols, ld;
  long long stride;
  size_t ElementBytes() const { return type == CUDA_R_32F ? 4 : 2; }
  // Elements the batch spans (0 for an empty matrix).
  long long Span(int batch) const {
    if (rows == 0 || cols == 0 || batch == 0) return 0;
    return static_cast<long long>(batch - 1) * stride + static_cast<long long>(cols - 1) * ld +
           rows;
  }
  // Element (r, c) of matrix `i` as float, rounded to what the compute
  // type multiplies.
  float At(int i, int r, int c, bool tf32) const {
    const long long at = i * stride + r + static_cast<long long>(c) * ld;
    if (type == CUDA_R_16BF)
      return tvlab::Bf16ToFloat(static_cast<const __nv_bfloat16*>(data)[at].bits);
    const float x = static_cast<const float*>(data)[at];
    return tf32 ? tvlab::RoundToTf32(x) : x;
  }
};

bool InsideAllocation(const void* data, long long span, size_t element_bytes) {
  return span == 0 || cuda_emulator::IsDeviceRange(data, static_cast<size_t>(span) * element_bytes);
}

cublasStatus_t Gemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, float alpha, const void* a, cudaDataType a_type, int lda,
                    long long stride_a, const void* b, cudaDataType b_type, int ldb,
                    long long stride_b, float beta, float* c, int ldc, long long stride_c,
                    int batch, bool tf32) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  const Operand A{a, a_type, ta ? k : m, ta ? m : k, lda, stride_a};
  const Operand B{b, b_type, tb ? n : k, tb ? k : n, ldb, stride_b};
  const Operand C{c, CUDA_R_32F, m, n, ldc, stride_c};
  for (const Operand* o : {&A, &B, &C})
    if (o->ld < (o->rows > 1 ? o->rows : 1)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const bool reads_ab = k > 0 && alpha != 0.0f;
  if ((reads_ab && (!InsideAllocation(a, A.Span(batch), A.ElementBytes()) ||
                    !InsideAllocation(b, B.Span(batch), B.ElementBytes()))) ||
      !InsideAllocation(c, C.Span(batch), 4))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  for (int i = 0; i < batch; ++i)
    for (int col = 0; col < n; ++col)
      for (int row = 0; row < m; ++row) {
        double sum = 0.0;
        if (reads_ab)
          for (int p = 0; p < k; ++p) {
            const float x = ta ? A.At(i, p, row, tf32) : A.At(i, row, p, tf32);
            const float y = tb ? B.At(i, col, p, tf32) : B.At(i, p, col, tf32);
            sum += static_cast<double>(x) * y;
          }
        float& out = c[i * stride_c + row + static_cast<long long>(col) * ldc];
        // beta == 0: C is not read (it may hold NaN), as BLAS defines.
        out = static_cast<float>(alpha * sum +
                                 (beta == 0.0f ? 0.0 : static_cast<double>(beta) * out));
      }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED (emulator: an operand outside its device allocation)";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "unknown cuBLAS status";
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch) {
  return Gemm(handle, transa, transb, m, n, k, *alpha, a, CUDA_R_32F, lda, stride_a, b, CUDA_R_32F,
              ldb, stride_b, *beta, c, ldc, stride_c, batch, /*tf32=*/false);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* a, cudaDataType a_type,
                                          int lda, long long stride_a, const void* b,
                                          cudaDataType b_type, int ldb, long long stride_b,
                                          const void* beta, void* c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  // The combinations cublas_gemm.cc uses: fp32 or bf16 operands, an fp32
  // output, fp32 scalars and accumulation (TF32 multiplies for FAST_TF32).
  if (c_type != CUDA_R_32F || a_type != b_type || (a_type != CUDA_R_32F && a_type != CUDA_R_16BF))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return Gemm(handle, transa, transb, m, n, k, *static_cast<const float*>(alpha), a, a_type, lda,
              stride_a, b, b_type, ldb, stride_b, *static_cast<const float*>(beta),
              static_cast<float*>(c), ldc, stride_c, batch,
              compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a_type == CUDA_R_32F);
}
