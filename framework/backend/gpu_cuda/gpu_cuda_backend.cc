#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "framework/backend/describe_backend.h"
#include "framework/backend/gpu_cuda/adamw_kernel.h"
#include "framework/backend/gpu_cuda/fill_kernel.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

#define TVLAB_CUDA_CHECK(expr)                                                      \
  do {                                                                              \
    cudaError_t err = (expr);                                                       \
    TVLAB_CHECK(err == cudaSuccess) << #expr << ": " << cudaGetErrorString(err);    \
  } while (0)

// cudaMalloc'd memory for the caching allocator.
class CudaMemory : public DeviceMemory {
 public:
  Device device() const override { return Device::kCuda; }
  void* Allocate(size_t bytes) override {
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky out-of-memory error
      return nullptr;
    }
    return ptr;
  }
  void Free(void* ptr, size_t) override { TVLAB_CUDA_CHECK(cudaFree(ptr)); }
  void CopyToHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) TVLAB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void CopyFromHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) TVLAB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void CopyOnDevice(const void* src, void* dst, size_t bytes) override {
    if (bytes) TVLAB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  }
  void Fill(float* dst, int64_t n, float value) override {
    const int err = LaunchFill(dst, n, value);
    TVLAB_CHECK(err == 0) << "fill kernel: " << cudaGetErrorString(static_cast<cudaError_t>(err));
  }
};

// Registered at start-up; nothing touches the driver until a tensor is made.
const bool kMemoryRegistered = RegisterDeviceMemory(std::make_unique<CudaMemory>());

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

// One GPU per process: the launcher's local rank picks it (mpirun sets
// OMPI_COMM_WORLD_LOCAL_RANK, MPICH MPI_LOCALRANKID, Slurm SLURM_LOCALID);
// device 0 for a process started alone.
static int LocalCudaDevice() {
  int local_rank = 0;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      local_rank = std::atoi(value);
      break;
    }
  }
  int count = 1;
  TVLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
  return count > 0 ? local_rank % count : 0;
}

GpuCudaBackend::GpuCudaBackend() {
  // Before any context or allocation of this process (tensors on kCuda need
  // this backend first), so everything lands on this process's GPU.
  TVLAB_CUDA_CHECK(cudaSetDevice(LocalCudaDevice()));
  cublasHandle_t handle;
  TVLAB_CHECK(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) << "cublasCreate failed";
  cublas_ = handle;
}

GpuCudaBackend::~GpuCudaBackend() { cublasDestroy(static_cast<cublasHandle_t>(cublas_)); }

std::string GpuCudaBackend::device_model() const {
  int device = 0;
  cudaDeviceProp properties;
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess)
    return "unknown CUDA device";
  return properties.name;
}

PrecisionSupport GpuCudaPrecisionSupport(Precision precision) {
  if (precision == Precision::kFp32) return {true, ""};
  std::string why;
  if (!CudaDeviceAvailable(&why)) return {false, why};
  int major = 0;
  TVLAB_CUDA_CHECK(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, LocalCudaDevice()));
  if (major >= 8) return {true, ""};
  return {false, absl::StrCat("this GPU has compute capability ", major,
                              ".x; TF32 and bf16 tensor-core GEMMs need 8.0 (Ampere) or later")};
}

void GpuCudaBackend::Gemm(const GemmDesc& d, const float* a, const float* b, float* c) {
  CublasGemm(cublas_, d, a, b, c, &bf16_scratch_);
}

void GpuCudaBackend::GemmBias(const GemmDesc& d, const float* a, const float* b, const float* bias,
                              float* c) {
  CheckGemmBiasDesc(d);
  const int err = LaunchFillRows(c, d.batch * d.m, d.n, bias);  // (batch * m, n) rows of bias
  TVLAB_CHECK(err == 0) << "bias fill launch: "
                        << cudaGetErrorString(static_cast<cudaError_t>(err));
  GemmDesc accumulate = d;
  accumulate.beta = 1.0f;  // c = op(a) op(b) + c
  CublasGemm(cublas_, accumulate, a, b, c, &bf16_scratch_);
}

void GpuCudaBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                           const AdamWHyper& h) {
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), h.step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), h.step));
  int err = LaunchAdamW(param, grad, m, v, n, h.lr, h.beta1, h.beta2, h.eps,
                        h.weight_decay, bc1, std::sqrt(bc2));
  TVLAB_CHECK(err == 0) << "AdamW kernel launch: " << cudaGetErrorString(static_cast<cudaError_t>(err));
}

namespace {
const bool kRegistered = RegisterBackend(DescribeBackend<GpuCudaBackend>("gpu_cuda")
                                             .OnDevice(Device::kCuda, &CudaDeviceAvailable)
                                             .WithPrecisions(&GpuCudaPrecisionSupport));
}  // namespace

}  // namespace tvlab
