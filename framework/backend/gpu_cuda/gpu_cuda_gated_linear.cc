// GpuCudaBackend::GatedLinearScan and its backward: shapes, scratch from
// the caching allocator (returned when the call returns; safe because
// everything is ordered on the one stream, as gpu_cuda_ops.cc explains),
// and the launches of gated_linear_kernels.cu, their status checked.

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "framework/backend/gpu_cuda/gated_linear_kernels.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

GatedLinearScanSizes Sizes(const GatedLinearScanDesc& d) {
  return {d.batch * d.heads, d.tokens, d.key_dim, d.value_dim, d.gate_dim, d.chunk};
}

// A device buffer of n floats for one call (none when n is 0).
std::unique_ptr<Buffer> Floats(int64_t n) {
  return n > 0 ? std::make_unique<Buffer>(Device::kCuda, static_cast<size_t>(n) * sizeof(float))
               : nullptr;
}
float* Ptr(const std::unique_ptr<Buffer>& b) {
  return b ? static_cast<float*>(b->ptr()) : nullptr;
}

// As gpu_cuda_ops.cc's CheckLaunch: a failing launch stops the process;
// TVLAB_CUDA_SYNC=1 also waits for the kernels, naming the one that failed.
void CheckScanLaunch(int err, const char* kernel) {
  TVLAB_CHECK(err == 0) << "gpu_cuda " << kernel << " launch: "
                        << cudaGetErrorString(static_cast<cudaError_t>(err));
  const char* sync = std::getenv("TVLAB_CUDA_SYNC");
  if (sync == nullptr || sync[0] == '\0' || std::strcmp(sync, "0") == 0) return;
  const cudaError_t done = cudaDeviceSynchronize();
  TVLAB_CHECK(done == cudaSuccess) << "gpu_cuda " << kernel << ": " << cudaGetErrorString(done);
}

}  // namespace

void GpuCudaBackend::GatedLinearScan(const GatedLinearScanDesc& d, const float* q, const float* k,
                                     const float* v, const float* log_gate, const float* state,
                                     float* out, float* final_state) {
  CheckGatedLinearScanDesc(d);
  const GatedLinearScanSizes s = Sizes(d);
  auto cum = Floats(log_gate != nullptr ? s.pairs * s.tokens * s.gate_dim : 0);
  auto states = Floats(s.pairs * d.chunks() * s.key_dim * s.value_dim);
  CheckScanLaunch(LaunchGatedLinearScan(s, q, k, v, log_gate, state, out, final_state, Ptr(cum),
                                        Ptr(states)),
                  "GatedLinearScan");
}

void GpuCudaBackend::GatedLinearScanBackward(const GatedLinearScanDesc& d, const float* q,
                                             const float* k, const float* v,
                                             const float* log_gate, const float* state,
                                             const float* dout, const float* dfinal_state,
                                             float* dq, float* dk, float* dv, float* dlog_gate,
                                             float* dstate) {
  CheckGatedLinearScanDesc(d);
  const GatedLinearScanSizes s = Sizes(d);
  const bool gated = log_gate != nullptr;
  const int64_t state_floats = s.pairs * d.chunks() * s.key_dim * s.value_dim;
  auto cum = Floats(gated ? s.pairs * s.tokens * s.gate_dim : 0);
  auto states = Floats(state_floats), dstates = Floats(state_floats);
  auto final_state = Floats(s.pairs * s.key_dim * s.value_dim);
  auto dcum = Floats(gated ? s.pairs * s.tokens * s.key_dim : 0);
  CheckScanLaunch(LaunchGatedLinearScanBackward(s, q, k, v, log_gate, state, dout, dfinal_state,
                                                dq, dk, dv, dlog_gate, dstate, Ptr(cum),
                                                Ptr(states), Ptr(final_state), Ptr(dstates),
                                                Ptr(dcum)),
                  "GatedLinearScanBackward");
}

}  // namespace tvlab
