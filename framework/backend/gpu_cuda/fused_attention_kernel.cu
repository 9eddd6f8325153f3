// Launchers of the fused attention kernels: fp32 (fused_attention_device.cuh
// describes how they split the work; fused_attention_forward.cuh and
// fused_attention_backward.cuh hold them) and tensor-core
// (fused_attention_tensor_core.cuh). Compiled by nvcc (BUILD.bazel).

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "framework/backend/gpu_cuda/fused_attention_backward.cuh"
#include "framework/backend/gpu_cuda/fused_attention_bias_backward.cuh"
#include "framework/backend/gpu_cuda/fused_attention_device.cuh"
#include "framework/backend/gpu_cuda/fused_attention_forward.cuh"
#include "framework/backend/gpu_cuda/fused_attention_kernel.h"
#include "framework/backend/gpu_cuda/fused_attention_tensor_core.cuh"
#include "framework/backend/gpu_cuda/fused_attention_tensor_core_backward.cuh"
#include "framework/backend/gpu_cuda/fused_attention_tensor_core_forward.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace cuda {
namespace {

using fused::BackwardKeyValueKernel;
using fused::BackwardQueryKernel;
using fused::BucketTableGradientKernel;
using fused::DistanceGradientKernel;
using fused::ForwardKernel;
using fused::kRowsPerBlock;
using fused::kThreads;
using fused::kTile;
using fused::kWarps;
using fused::RowDotKernel;

// ---------------------------------------------------------------------------
// Host side.

// Columns per lane for an output `cols` wide: 1, 2, 4 or 8 (8 = 256 columns
// per launch; wider outputs take several 256-column windows).
int DimsPerLane(int64_t cols) {
  if (cols <= 32) return 1;
  if (cols <= 64) return 2;
  if (cols <= 128) return 4;
  return 8;
}

std::string CudaError(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

// Allows `kernel` `bytes` of dynamic shared memory (above the default 48 KiB
// it must be opted into), or says why it cannot have them.
template <typename KernelFn>
std::string AllowSharedMemory(KernelFn kernel, size_t bytes, const char* what) {
  int device = 0, optin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return CudaError(what, err);
  if (bytes > static_cast<size_t>(optin))
    return std::string(what) + ": the head sizes need " + std::to_string(bytes) +
           " bytes of shared memory per block, the device allows " + std::to_string(optin) +
           " (gpu_cuda stages whole K and V rows: head sizes above about 600 do not fit on Hopper)";
  if (bytes > 48 * 1024) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes));
    if (err != cudaSuccess) return CudaError(what, err);
  }
  return "";
}

template <int kDimsPerLane>
std::string Forward(const FusedAttentionParams& p, const float* q, const float* k,
                    const float* v, float* out, float* lse) {
  const int64_t blocks =
      p.batch * p.heads * ((p.queries + kRowsPerBlock - 1) / kRowsPerBlock);
  const size_t bytes = sizeof(float) * (kRowsPerBlock * p.head_dim + kTile * (p.head_dim + 1) +
                                        kTile * p.value_dim);
  std::string error = AllowSharedMemory(ForwardKernel<kDimsPerLane>, bytes, "fused attention");
  if (!error.empty()) return error;
  for (int col0 = 0; col0 == 0 || col0 < p.value_dim; col0 += 32 * kDimsPerLane)
    TVLAB_LAUNCH(static_cast<unsigned>(blocks), kThreads, bytes, 0, ForwardKernel<kDimsPerLane>)(
        p, q, k, v, out, lse, col0);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : CudaError("fused attention kernel", err);
}

template <int kDimsPerLane>
std::string BackwardQuery(const FusedAttentionParams& p, const float* q, const float* k,
                          const float* v, const float* lse, const float* dout,
                          const float* row_dot, float* dq) {
  const int64_t blocks =
      p.batch * p.heads * ((p.queries + kRowsPerBlock - 1) / kRowsPerBlock);
  const size_t bytes =
      sizeof(float) * (kRowsPerBlock * (p.head_dim + p.value_dim) +
                       kTile * (p.head_dim + 1) + kTile * (p.value_dim + 1));
  std::string error =
      AllowSharedMemory(BackwardQueryKernel<kDimsPerLane>, bytes, "fused attention dq");
  if (!error.empty()) return error;
  for (int col0 = 0; col0 < p.head_dim; col0 += 32 * kDimsPerLane)
    TVLAB_LAUNCH(static_cast<unsigned>(blocks), kThreads, bytes, 0,
                 BackwardQueryKernel<kDimsPerLane>)(p, q, k, v, lse, dout, row_dot, dq, col0);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : CudaError("fused attention dq kernel", err);
}

template <int kDimsPerLane>
std::string BackwardKeyValue(const FusedAttentionParams& p, const float* q, const float* k,
                             const float* v, const float* lse, const float* dout,
                             const float* row_dot, float* dk, float* dv) {
  const int64_t blocks =
      p.batch * p.kv_heads * ((p.keys + kRowsPerBlock - 1) / kRowsPerBlock);
  const size_t bytes =
      sizeof(float) * (kRowsPerBlock * (p.head_dim + p.value_dim) +
                       kTile * (p.head_dim + 1) + kTile * (p.value_dim + 1) + 2 * kTile);
  std::string error =
      AllowSharedMemory(BackwardKeyValueKernel<kDimsPerLane>, bytes, "fused attention dk/dv");
  if (!error.empty()) return error;
  const int64_t cols = std::max(p.head_dim, p.value_dim);
  for (int col0 = 0; col0 < cols; col0 += 32 * kDimsPerLane)
    TVLAB_LAUNCH(static_cast<unsigned>(blocks), kThreads, bytes, 0,
                 BackwardKeyValueKernel<kDimsPerLane>)(p, q, k, v, lse, dout, row_dot, dk, dv,
                                                       col0);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : CudaError("fused attention dk/dv kernel", err);
}

// --- The tensor-core kernels (runtime.precision bf16) -------------------------

// One launch of `kernel` over `blocks` blocks with its SharedLayout's bytes.
template <typename KernelFn, typename... Args>
std::string LaunchTensorCore(KernelFn kernel, tc::TcKernel which, int64_t blocks,
                             const FusedAttentionParams& p, const char* what, Args... args) {
  const tc::SharedLayout layout(tc::Pad16(p.head_dim), tc::Pad16(p.value_dim), which);
  std::string error = AllowSharedMemory(kernel, static_cast<size_t>(layout.bytes), what);
  if (!error.empty()) return error;
  TVLAB_LAUNCH(static_cast<unsigned>(blocks), tc::kThreads, static_cast<size_t>(layout.bytes), 0,
               kernel)(p, args...);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : CudaError(what, err);
}

template <int kDim>
std::string TensorCoreForward(const FusedAttentionParams& p, const float* q, const float* k,
                              const float* v, float* out, float* lse) {
  const int64_t blocks = p.batch * p.heads * ((p.queries + tc::kBlockRows - 1) / tc::kBlockRows);
  return LaunchTensorCore(tc::ForwardKernel<kDim>, tc::TcKernel::kForward, blocks, p,
                          "fused attention (tensor cores)", q, k, v, out, lse);
}

template <int kDim>
std::string TensorCoreBackward(const FusedAttentionParams& p, const float* q, const float* k,
                               const float* v, const float* lse, const float* dout,
                               const float* row_dot, float* dq, float* dk, float* dv) {
  if (p.batch * p.heads * p.queries > 0) {
    const int64_t blocks =
        p.batch * p.heads * ((p.queries + tc::kBlockRows - 1) / tc::kBlockRows);
    const std::string error =
        LaunchTensorCore(tc::BackwardQueryKernel<kDim>, tc::TcKernel::kQuery, blocks, p,
                         "fused attention dq (tensor cores)", q, k, v, lse, dout, row_dot, dq);
    if (!error.empty()) return error;
  }
  if (p.batch * p.kv_heads * p.keys == 0) return "";
  const int64_t blocks = p.batch * p.kv_heads * ((p.keys + tc::kBlockRows - 1) / tc::kBlockRows);
  return LaunchTensorCore(tc::BackwardKeyValueKernel<kDim>, tc::TcKernel::kKeyValue, blocks, p,
                          "fused attention dk/dv (tensor cores)", q, k, v, lse, dout, row_dot,
                          dk, dv);
}

}  // namespace

std::string LaunchFusedAttentionForward(const FusedAttentionParams& p, const float* q,
                                        const float* k, const float* v, float* out,
                                        float* lse) {
  if (p.batch * p.heads * p.queries == 0) return "";  // no rows
  if (tc::TensorCoreFits(p))
    return tc::TemplateDim(p) == 64 ? TensorCoreForward<64>(p, q, k, v, out, lse)
                                    : TensorCoreForward<tc::kMaxDim>(p, q, k, v, out, lse);
  switch (DimsPerLane(p.value_dim)) {
    case 1: return Forward<1>(p, q, k, v, out, lse);
    case 2: return Forward<2>(p, q, k, v, out, lse);
    case 4: return Forward<4>(p, q, k, v, out, lse);
    default: return Forward<8>(p, q, k, v, out, lse);
  }
}

namespace {

// dq, dk and dv, after the row dots D.
std::string BackwardInputs(const FusedAttentionParams& p, const float* q, const float* k,
                           const float* v, const float* lse, const float* dout, float* dq,
                           float* dk, float* dv, const float* row_dot) {
  const int64_t rows = p.batch * p.heads * p.queries;
  if (tc::TensorCoreFits(p))
    return tc::TemplateDim(p) == 64
               ? TensorCoreBackward<64>(p, q, k, v, lse, dout, row_dot, dq, dk, dv)
               : TensorCoreBackward<tc::kMaxDim>(p, q, k, v, lse, dout, row_dot, dq, dk, dv);
  if (rows > 0) {
    std::string error;
    switch (DimsPerLane(p.head_dim)) {
      case 1: error = BackwardQuery<1>(p, q, k, v, lse, dout, row_dot, dq); break;
      case 2: error = BackwardQuery<2>(p, q, k, v, lse, dout, row_dot, dq); break;
      case 4: error = BackwardQuery<4>(p, q, k, v, lse, dout, row_dot, dq); break;
      default: error = BackwardQuery<8>(p, q, k, v, lse, dout, row_dot, dq); break;
    }
    if (!error.empty()) return error;
  }
  if (p.batch * p.kv_heads * p.keys == 0) return "";
  // With no query rows the kernel still runs: it writes zero dk and dv.
  switch (DimsPerLane(std::max(p.head_dim, p.value_dim))) {
    case 1: return BackwardKeyValue<1>(p, q, k, v, lse, dout, row_dot, dk, dv);
    case 2: return BackwardKeyValue<2>(p, q, k, v, lse, dout, row_dot, dk, dv);
    case 4: return BackwardKeyValue<4>(p, q, k, v, lse, dout, row_dot, dk, dv);
    default: return BackwardKeyValue<8>(p, q, k, v, lse, dout, row_dot, dk, dv);
  }
}

// The bucketed bias's table gradient (fused_attention_bias_backward.cuh).
std::string BackwardBucketTable(const FusedAttentionParams& p, const float* q, const float* k,
                                const float* v, const float* lse, const float* dout,
                                const float* row_dot, float* dbias_table, float* distance_grad) {
  const int64_t distances = p.heads * p.distance_span, table = p.num_buckets * p.heads;
  if (distances > 0)
    TVLAB_LAUNCH(static_cast<unsigned>((distances + kThreads - 1) / kThreads), kThreads, 0, 0,
                 DistanceGradientKernel)(p, q, k, v, lse, dout, row_dot, distance_grad);
  if (table > 0)
    TVLAB_LAUNCH(static_cast<unsigned>((table + kThreads - 1) / kThreads), kThreads, 0, 0,
                 BucketTableGradientKernel)(p, distance_grad, dbias_table);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : CudaError("fused attention bucket-bias kernels", err);
}

}  // namespace

std::string LaunchFusedAttentionBackward(const FusedAttentionParams& p, const float* q,
                                         const float* k, const float* v, const float* out,
                                         const float* lse, const float* dout, float* dq,
                                         float* dk, float* dv, float* row_dot,
                                         float* dbias_table, float* distance_grad) {
  const int64_t rows = p.batch * p.heads * p.queries;
  if (rows > 0) {
    TVLAB_LAUNCH(static_cast<unsigned>((rows + kWarps - 1) / kWarps), kThreads, 0, 0, RowDotKernel)(
        dout, out, rows, p.value_dim, row_dot);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return CudaError("fused attention row-dot kernel", err);
  }
  const std::string error = BackwardInputs(p, q, k, v, lse, dout, dq, dk, dv, row_dot);
  if (!error.empty() || p.distance_bias == nullptr) return error;
  return BackwardBucketTable(p, q, k, v, lse, dout, row_dot, dbias_table, distance_grad);
}

}  // namespace cuda
}  // namespace tvlab
