// GpuCudaBackend's kernels other than GEMM and AdamW (gpu_cuda_backend.cc):
// host-side shape handling (broadcast strides, permutation strides, chunk
// sizes), scratch from the caching allocator, one launch per kernel on the
// default stream, and a check of every launch's status.
//
// Scratch lifetime: a Buffer is returned to the caching allocator when the
// call returns, possibly before its kernels have run. That is safe because
// everything touching device memory is ordered on the one stream: a later
// kernel that reuses the block runs after these, and host copies
// (cudaMemcpy on the legacy default stream) wait for them.

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "framework/backend/gpu_cuda/elementwise_kernels.h"
#include "framework/backend/gpu_cuda/gpu_cuda_backend.h"
#include "framework/backend/gpu_cuda/index_kernels.h"
#include "framework/backend/gpu_cuda/loss_kernels.h"
#include "framework/backend/gpu_cuda/norm_kernels.h"
#include "framework/backend/gpu_cuda/position_tables.h"
#include "framework/backend/gpu_cuda/reduction_kernels.h"
#include "framework/backend/gpu_cuda/routing_kernels.h"
#include "framework/backend/gpu_cuda/softmax_kernels.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// TVLAB_CUDA_SYNC=1: wait for every kernel, so that a fault inside one is
// reported here, by name, rather than by a later unrelated call.
bool SyncAfterEveryKernel() {
  static const bool sync = [] {
    const char* value = std::getenv("TVLAB_CUDA_SYNC");
    return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
  }();
  return sync;
}

// Stops the process when a launch (or, with TVLAB_CUDA_SYNC, the kernel)
// failed: a failing kernel must never pass silently.
void CheckLaunch(int err, const char* kernel) {
  TVLAB_CHECK(err == 0) << "gpu_cuda " << kernel << " launch: "
                        << cudaGetErrorString(static_cast<cudaError_t>(err));
  if (SyncAfterEveryKernel()) {
    const cudaError_t done = cudaDeviceSynchronize();
    TVLAB_CHECK(done == cudaSuccess) << "gpu_cuda " << kernel << ": " << cudaGetErrorString(done);
  }
}

// Device scratch for one call (none when bytes == 0).
class Scratch {
 public:
  explicit Scratch(size_t bytes)
      : buffer_(bytes ? std::make_unique<Buffer>(Device::kCuda, bytes) : nullptr) {}
  void* get() const { return buffer_ ? buffer_->ptr() : nullptr; }

 private:
  std::unique_ptr<Buffer> buffer_;
};

GpuUnary ToGpu(UnaryOp op) {
  switch (op) {
    case UnaryOp::kRelu: return GpuUnary::kRelu;
    case UnaryOp::kGeluErf: return GpuUnary::kGeluErf;
    case UnaryOp::kGeluTanh: return GpuUnary::kGeluTanh;
    case UnaryOp::kSilu: return GpuUnary::kSilu;
    case UnaryOp::kSigmoid: return GpuUnary::kSigmoid;
    case UnaryOp::kTanh: return GpuUnary::kTanh;
    case UnaryOp::kExp: return GpuUnary::kExp;
    case UnaryOp::kLog: return GpuUnary::kLog;
    case UnaryOp::kSqrt: return GpuUnary::kSqrt;
    case UnaryOp::kSquare: return GpuUnary::kSquare;
  }
  TVLAB_CHECK(false) << "unknown UnaryOp " << static_cast<int>(op);
  return GpuUnary::kRelu;
}

GpuBinary ToGpu(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return GpuBinary::kAdd;
    case BinaryOp::kSub: return GpuBinary::kSub;
    case BinaryOp::kMul: return GpuBinary::kMul;
    case BinaryOp::kDiv: return GpuBinary::kDiv;
  }
  TVLAB_CHECK(false) << "unknown BinaryOp " << static_cast<int>(op);
  return GpuBinary::kAdd;
}

void CheckRank(size_t rank, const char* kernel) {
  TVLAB_CHECK(rank <= static_cast<size_t>(kMaxGpuRank))
      << "gpu_cuda " << kernel << " takes tensors of rank at most " << kMaxGpuRank << ", got "
      << rank;
}

// Whether `shape`, without its leading 1s, is the trailing part of `out`:
// then its element i of the output is element i % numel of the operand.
bool IsTrailingPart(const Shape& shape, const Shape& out) {
  size_t first = 0;
  while (first < shape.size() && shape[first] == 1) ++first;
  const size_t length = shape.size() - first;
  if (length > out.size()) return false;
  for (size_t i = 0; i < length; ++i)
    if (shape[first + i] != out[out.size() - length + i]) return false;
  return true;
}

// Strides of `shape` right-aligned into `rank` dims, 0 where it broadcasts
// (as the reference backend).
Shape BroadcastStrides(const Shape& shape, size_t rank) {
  Shape strides(rank, 0);
  const Shape own = ContiguousStrides(shape);
  const size_t pad = rank - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) strides[pad + i] = shape[i] == 1 ? 0 : own[i];
  return strides;
}

}  // namespace

void GpuCudaBackend::Unary(UnaryOp op, const float* x, float* y, int64_t n) {
  CheckLaunch(LaunchUnary(ToGpu(op), x, y, n), "Unary");
}

void GpuCudaBackend::UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy,
                                   float* dx, int64_t n) {
  CheckLaunch(LaunchUnaryBackward(ToGpu(op), x, y, dy, dx, n), "UnaryBackward");
}

void GpuCudaBackend::Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                            const Shape& b_shape, float* out, const Shape& out_shape) {
  const int64_t n = NumElements(out_shape);
  // Same shape, a row vector, a scalar: no index math.
  if (IsTrailingPart(a_shape, out_shape) && IsTrailingPart(b_shape, out_shape)) {
    CheckLaunch(LaunchBinarySuffix(ToGpu(op), a, NumElements(a_shape), b, NumElements(b_shape),
                                   out, n),
                "Binary");
    return;
  }
  const size_t rank = out_shape.size();
  CheckRank(rank, "Binary");
  const Shape sa = BroadcastStrides(a_shape, rank), sb = BroadcastStrides(b_shape, rank);
  BroadcastIndex index;
  index.rank = static_cast<int>(rank);
  for (size_t d = 0; d < rank; ++d) {
    index.out_size[d] = out_shape[d];
    index.a_stride[d] = sa[d];
    index.b_stride[d] = sb[d];
  }
  CheckLaunch(LaunchBinaryStrided(ToGpu(op), a, b, out, index, n), "Binary");
}

void GpuCudaBackend::ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                                 const Shape& out_shape) {
  const size_t rank = x_shape.size();
  TVLAB_CHECK(out_shape.size() <= rank)
      << "ReduceSumTo to " << ShapeToString(out_shape) << " from " << ShapeToString(x_shape);
  CheckRank(rank, "ReduceSumTo");
  const Shape strides = ContiguousStrides(x_shape);
  const size_t pad = rank - out_shape.size();
  ReduceIndex index;
  int64_t n_out = 1, n_reduced = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t out_dim = d >= pad ? out_shape[d - pad] : 1;
    if (x_shape[d] == 1) continue;  // contributes nothing to either side
    if (out_dim == x_shape[d]) {
      index.kept_size[index.kept_rank] = x_shape[d];
      index.kept_stride[index.kept_rank++] = strides[d];
      n_out *= x_shape[d];
    } else {
      TVLAB_CHECK(out_dim == 1) << "ReduceSumTo: " << ShapeToString(out_shape)
                                << " does not broadcast to " << ShapeToString(x_shape);
      index.reduced_size[index.reduced_rank] = x_shape[d];
      index.reduced_stride[index.reduced_rank++] = strides[d];
      n_reduced *= x_shape[d];
    }
  }
  TVLAB_CHECK_EQ(n_out, NumElements(out_shape));
  Scratch scratch(ReduceSumToScratchBytes(n_out, n_reduced));
  CheckLaunch(LaunchReduceSumTo(x, index, n_out, n_reduced, out, scratch.get()), "ReduceSumTo");
}

void GpuCudaBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  CheckLaunch(LaunchSoftmax(x, y, rows, cols), "Softmax");
}

void GpuCudaBackend::SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                                     int64_t cols) {
  CheckLaunch(LaunchSoftmaxBackward(y, dy, dx, rows, cols), "SoftmaxBackward");
}

void GpuCudaBackend::AttentionMaskBias(const AttentionMask& mask, int64_t t, int64_t s,
                                       float* out) {
  const bool padded = !mask.key_lengths.empty();
  const int64_t rows =
      padded ? static_cast<int64_t>(mask.key_lengths.size())
             : mask.has_documents() ? static_cast<int64_t>(mask.document_begin.size()) /
                                          mask.document_positions
                                    : 1;
  CheckLaunch(LaunchAttentionMaskBias(mask.causal, mask.causal_offset, mask.window,
                                      padded ? mask.key_lengths.data() : nullptr, rows, t, s,
                                      out),
              "AttentionMaskBias");
  if (!mask.has_documents()) return;
  // Each query's document [begin, end) (R, T) x 2, uploaded in one copy.
  std::vector<int32_t> spans(2 * rows * t);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < t; ++i) {
      spans[r * t + i] = mask.document_begin[mask.DocumentIndex(r, i)];
      spans[(rows + r) * t + i] = mask.document_end[mask.DocumentIndex(r, i)];
    }
  Scratch tables(spans.size() * sizeof(int32_t));
  const cudaError_t copied = cudaMemcpy(tables.get(), spans.data(), spans.size() * sizeof(int32_t),
                                        cudaMemcpyHostToDevice);
  TVLAB_CHECK(copied == cudaSuccess) << "document mask tables: " << cudaGetErrorString(copied);
  const int32_t* device = static_cast<const int32_t*>(tables.get());
  CheckLaunch(LaunchDocumentMask(device, device + rows * t, rows, t, s, out), "DocumentMask");
}

void GpuCudaBackend::RotaryTables(int64_t offset, int64_t t, int64_t d, double base, float* cos,
                                  float* sin) {
  CheckLaunch(LaunchRotaryTables(offset, t, d, base, cos, sin), "RotaryTables");
}

void GpuCudaBackend::Rotary(const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t t,
                            int64_t heads, int64_t d, bool interleaved, bool inverse) {
  CheckLaunch(LaunchRotary(x, cos, sin, y, rows, t, heads, d, interleaved, inverse), "Rotary");
}

void GpuCudaBackend::SinusoidalTable(int64_t offset, int64_t t, int64_t c, double base,
                                     float* out) {
  CheckLaunch(LaunchSinusoidalTable(offset, t, c, base, out), "SinusoidalTable");
}

void GpuCudaBackend::AlibiBias(const std::vector<double>& slopes, int64_t q_offset, int64_t t,
                               int64_t s, float* out) {
  CheckLaunch(LaunchAlibiBias(slopes.data(), static_cast<int64_t>(slopes.size()), q_offset, t, s,
                              out),
              "AlibiBias");
}

void GpuCudaBackend::Normalize(const float* x, const float* gamma, const float* beta, float* y,
                               float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                               bool subtract_mean) {
  CheckLaunch(LaunchNormalize(x, gamma, beta, y, mean, rstd, rows, cols, eps, subtract_mean),
              "Normalize");
}

void GpuCudaBackend::NormalizeBackward(const float* x, const float* gamma, const float* mean,
                                       const float* rstd, const float* dy, float* dx,
                                       float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                                       bool subtract_mean) {
  Scratch scratch(dgamma || dbeta ? NormalizeBackwardScratchBytes(rows, cols) : 0);
  CheckLaunch(LaunchNormalizeBackward(x, gamma, mean, rstd, dy, /*addend=*/nullptr, dx, dgamma, dbeta,
                                      rows, cols, subtract_mean, scratch.get()),
              "NormalizeBackward");
}

void GpuCudaBackend::NormalizeBackwardAdd(const float* x, const float* gamma, const float* mean,
                                          const float* rstd, const float* dy, const float* addend,
                                          float* dx, float* dgamma, float* dbeta, int64_t rows,
                                          int64_t cols, bool subtract_mean) {
  TVLAB_CHECK(addend != nullptr && addend != dx) << "NormalizeBackwardAdd: a null addend, or dx aliasing it";
  Scratch scratch(dgamma || dbeta ? NormalizeBackwardScratchBytes(rows, cols) : 0);
  CheckLaunch(LaunchNormalizeBackward(x, gamma, mean, rstd, dy, addend, dx, dgamma, dbeta, rows,
                                      cols, subtract_mean, scratch.get()),
              "NormalizeBackwardAdd");
}

void GpuCudaBackend::Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                             float* y) {
  const size_t rank = shape.size();
  CheckRank(rank, "Permute");
  TVLAB_CHECK_EQ(perm.size(), rank);
  const Shape in_strides = ContiguousStrides(shape);
  PermuteIndex index;
  index.rank = static_cast<int>(rank);
  for (size_t i = 0; i < rank; ++i) {
    index.out_size[i] = shape[perm[i]];
    index.src_stride[i] = in_strides[perm[i]];
  }
  CheckLaunch(LaunchPermute(x, index, NumElements(shape), y), "Permute");
}

void GpuCudaBackend::Copy2D(const float* src, int64_t src_stride, float* dst, int64_t dst_stride,
                            int64_t rows, int64_t cols) {
  CheckLaunch(LaunchCopy2D(src, src_stride, dst, dst_stride, rows, cols), "Copy2D");
}

void GpuCudaBackend::Gather(const float* table, int64_t cols, const int32_t* ids, int64_t n,
                            float* out) {
  CheckLaunch(LaunchGather(table, cols, ids, n, out), "Gather");
}

void GpuCudaBackend::ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids, int64_t n,
                                float* d_table) {
  CheckLaunch(LaunchScatterAdd(d_out, cols, ids, n, d_table), "ScatterAdd");
}

void GpuCudaBackend::CrossEntropy(const float* logits, const int32_t* targets, int64_t rows,
                                  int64_t cols, int32_t ignore_index, float label_smoothing,
                                  float* loss, float* probs, float* mean_loss) {
  CheckLaunch(LaunchCrossEntropy(logits, targets, rows, cols, ignore_index, label_smoothing, loss,
                                 probs, mean_loss),
              "CrossEntropy");
}

void GpuCudaBackend::CrossEntropyBackward(const float* probs, const int32_t* targets,
                                          int64_t rows, int64_t cols, int32_t ignore_index,
                                          float label_smoothing, const float* dloss,
                                          float* dlogits) {
  Scratch scratch(CrossEntropyBackwardScratchBytes());
  CheckLaunch(LaunchCrossEntropyBackward(probs, targets, rows, cols, ignore_index,
                                         label_smoothing, dloss, dlogits, scratch.get()),
              "CrossEntropyBackward");
}

void GpuCudaBackend::ArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  CheckLaunch(LaunchArgMaxRows(x, rows, cols, out), "ArgMaxRows");
}

void GpuCudaBackend::SumSquares(const float* x, int64_t n, double* acc) {
  Scratch scratch(SumSquaresScratchBytes(n));
  CheckLaunch(LaunchSumSquares(x, n, acc, scratch.get()), "SumSquares");
}

// Mixture-of-experts routing (routing_kernels.cu).
void GpuCudaBackend::TopKRows(const float* x, int64_t rows, int64_t cols, int64_t k,
                              float* values, int32_t* indices) {
  CheckLaunch(LaunchTopKRows(x, rows, cols, k, values, indices), "TopKRows");
}

void GpuCudaBackend::TopKRowsBackward(const float* dvalues, const int32_t* indices, int64_t rows,
                                      int64_t cols, int64_t k, float* dx) {
  CheckLaunch(LaunchTopKRowsBackward(dvalues, indices, rows, cols, k, dx), "TopKRowsBackward");
}

void GpuCudaBackend::RouteToExpertSlots(const int32_t* experts, int64_t tokens, int64_t k,
                                        int64_t num_experts, int64_t capacity, int32_t* slots,
                                        int32_t* slot_assignments, float* demand) {
  CheckLaunch(LaunchRouteToExpertSlots(experts, tokens, k, num_experts, capacity, slots,
                                       slot_assignments, demand),
              "RouteToExpertSlots");
}

void GpuCudaBackend::DispatchToSlots(const float* x, int64_t cols,
                                     const int32_t* slot_assignments, int64_t num_slots,
                                     int64_t k, float* out) {
  CheckLaunch(LaunchDispatchToSlots(x, cols, slot_assignments, num_slots, k, out),
              "DispatchToSlots");
}

void GpuCudaBackend::DispatchToSlotsBackward(const float* dout, int64_t cols,
                                             const int32_t* slots, int64_t tokens, int64_t k,
                                             float* dx) {
  CheckLaunch(LaunchDispatchToSlotsBackward(dout, cols, slots, tokens, k, dx),
              "DispatchToSlotsBackward");
}

void GpuCudaBackend::CombineFromSlots(const float* expert_out, int64_t cols, const int32_t* slots,
                                      const float* gates, int64_t tokens, int64_t k, float* y) {
  CheckLaunch(LaunchCombineFromSlots(expert_out, cols, slots, gates, tokens, k, y),
              "CombineFromSlots");
}

void GpuCudaBackend::CombineFromSlotsBackward(
    const float* expert_out, int64_t cols, const int32_t* slots, const int32_t* slot_assignments,
    int64_t num_slots, const float* gates, int64_t tokens, int64_t k, const float* dy,
    float* d_expert_out, float* d_gates) {
  CheckLaunch(LaunchCombineFromSlotsBackward(expert_out, cols, slots, slot_assignments, num_slots,
                                             gates, tokens, k, dy, d_expert_out, d_gates),
              "CombineFromSlotsBackward");
}

}  // namespace tvlab
