// GpuCudaBackend::DropoutMask: the Philox mask drawn on the device
// (dropout_kernel.cu), equal bit for bit to the CPU backends' mask.

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/core/check.h"

namespace tvlab {

void GpuCudaBackend::DropoutMask(const RngStream& stream, float p, float* mask, int64_t n) {
  const int err = cuda::LaunchDropoutMask(cuda::MakePhiloxStream(stream),
                                          DropoutThreshold(p), DropoutKeepScale(p), mask, n);
  TVLAB_CHECK(err == 0) << "dropout mask kernel: "
                        << cudaGetErrorString(static_cast<cudaError_t>(err));
}

}  // namespace tvlab
