#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/backend/gpu_cuda/adamw_kernel.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

#define TVLAB_CUDA_CHECK(expr)                                                      \
  do {                                                                              \
    cudaError_t err = (expr);                                                       \
    TVLAB_CHECK(err == cudaSuccess) << #expr << ": " << cudaGetErrorString(err);    \
  } while (0)

// A device copy of a host buffer, copied back on request.
class DeviceBuffer {
 public:
  DeviceBuffer(const float* host, int64_t n) : n_(n) {
    TVLAB_CUDA_CHECK(cudaMalloc(&ptr_, std::max<int64_t>(n, 1) * sizeof(float)));
    if (host != nullptr)
      TVLAB_CUDA_CHECK(cudaMemcpy(ptr_, host, n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  void CopyTo(float* host) const {
    TVLAB_CUDA_CHECK(cudaMemcpy(host, ptr_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
  }
  float* get() { return ptr_; }

 private:
  float* ptr_ = nullptr;
  int64_t n_;
};

}  // namespace

bool CudaDeviceAvailable(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  // Without a driver this is cudaErrorInsufficientDriver, not NoDevice: any
  // error means "no GPU".
  if (err != cudaSuccess) {
    if (why) *why = absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorString(err));
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  return true;
}

GpuCudaBackend::GpuCudaBackend() {
  cublasHandle_t handle;
  TVLAB_CHECK(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) << "cublasCreate failed";
  cublas_ = handle;
}

GpuCudaBackend::~GpuCudaBackend() { cublasDestroy(static_cast<cublasHandle_t>(cublas_)); }

void GpuCudaBackend::Gemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  const int64_t a_n = d.stride_a == 0 ? d.m * d.k : d.batch * d.stride_a;
  const int64_t b_n = d.stride_b == 0 ? d.k * d.n : d.batch * d.stride_b;
  const int64_t c_n = d.batch * d.stride_c;
  DeviceBuffer da(a, a_n), db(b, b_n), dc(d.beta != 0.0f ? c : nullptr, c_n);
  // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T,
  // so pass B first and swap m and n.
  const cublasOperation_t op_b = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = static_cast<int>(d.trans_b ? d.k : d.n);
  const int lda = static_cast<int>(d.trans_a ? d.m : d.k);
  cublasStatus_t status = cublasSgemmStridedBatched(
      static_cast<cublasHandle_t>(cublas_), op_b, op_a, static_cast<int>(d.n),
      static_cast<int>(d.m), static_cast<int>(d.k), &d.alpha, db.get(), ldb, d.stride_b,
      da.get(), lda, d.stride_a, &d.beta, dc.get(), static_cast<int>(d.n), d.stride_c,
      static_cast<int>(d.batch));
  TVLAB_CHECK(status == CUBLAS_STATUS_SUCCESS) << "cublasSgemmStridedBatched: " << status;
  dc.CopyTo(c);
}

void GpuCudaBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                           const AdamWHyper& h) {
  DeviceBuffer dp(param, n), dg(grad, n), dm(m, n), dv(v, n);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), h.step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), h.step));
  int err = LaunchAdamW(dp.get(), dg.get(), dm.get(), dv.get(), n, h.lr, h.beta1, h.beta2, h.eps,
                        h.weight_decay, bc1, std::sqrt(bc2));
  TVLAB_CHECK(err == 0) << "AdamW kernel launch: " << cudaGetErrorString(static_cast<cudaError_t>(err));
  dp.CopyTo(param);
  dm.CopyTo(m);
  dv.CopyTo(v);
}

namespace {
std::unique_ptr<Backend> MakeGpuCuda() {
  if (!CudaDeviceAvailable(nullptr)) return nullptr;  // MakeBackend reports why
  return std::make_unique<GpuCudaBackend>();
}
const bool kRegistered = RegisterBackend("gpu_cuda", &MakeGpuCuda);
}  // namespace

}  // namespace tvlab
