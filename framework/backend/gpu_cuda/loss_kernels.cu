// Cross-entropy with label smoothing and ignore_index, as the reference:
// per row (one block), log_z = max + log(sum exp(x - max)) with the sum in
// double, nll = log_z - x[target], smoothed loss
//   (1 - eps) * nll + eps * (log_z - mean(x)),
// probs = softmax(x) saved for the backward. The mean over counted rows and
// the backward's scale are single-block, fixed-order reductions.

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/loss_kernels.h"

namespace tvlab {
namespace {

using cuda_util::BlockReduce;
using cuda_util::GlobalIndex;
using cuda_util::GridFor;
using cuda_util::GridStride;
using cuda_util::kThreads;
using cuda_util::MaxOp;
using cuda_util::RowThreads;
using cuda_util::SumOp;

__global__ void CrossEntropyRowKernel(const float* logits, const int32_t* targets, int64_t cols,
                                      int32_t ignore_index, float label_smoothing, float* loss,
                                      float* probs) {
  const int64_t row = blockIdx.x;
  const float* xr = logits + row * cols;  // (cols)
  float* pr = probs + row * cols;
  float max = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) max = fmaxf(max, xr[c]);
  max = BlockReduce(max, MaxOp(), -INFINITY);
  if (max == -INFINITY) {  // as Softmax: an all -inf row has zero probabilities
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) pr[c] = 0.0f;
    if (threadIdx.x == 0) loss[row] = targets[row] == ignore_index ? 0.0f : INFINITY;
    return;
  }
  double sum_exp = 0.0, sum_x = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    sum_exp += expf(xr[c] - max);
    sum_x += xr[c];
  }
  sum_exp = BlockReduce(sum_exp, SumOp(), 0.0);
  sum_x = BlockReduce(sum_x, SumOp(), 0.0);
  const float sum_f = static_cast<float>(sum_exp);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) pr[c] = expf(xr[c] - max) / sum_f;
  if (threadIdx.x != 0) return;
  const int32_t target = targets[row];
  if (target == ignore_index) {
    loss[row] = 0.0f;
    return;
  }
  if (target < 0 || target >= cols) {
    loss[row] = NAN;
    return;
  }
  const double log_z = static_cast<double>(max) + log(sum_exp);
  const double nll = log_z - xr[target];
  const double mean_nll = log_z - sum_x / static_cast<double>(cols);
  loss[row] = static_cast<float>((1.0 - label_smoothing) * nll + label_smoothing * mean_nll);
}

// One block: mean_loss = sum(loss) / max(counted, 1), both in a fixed order.
__global__ void MeanLossKernel(const float* loss, const int32_t* targets, int64_t rows,
                               int32_t ignore_index, float* mean_loss) {
  double total = 0.0, counted = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    total += loss[r];
    counted += targets[r] != ignore_index ? 1.0 : 0.0;
  }
  total = BlockReduce(total, SumOp(), 0.0);
  counted = BlockReduce(counted, SumOp(), 0.0);
  if (threadIdx.x == 0) {
    const float denom = static_cast<float>(counted < 1.0 ? 1.0 : counted);
    mean_loss[0] = static_cast<float>(total / denom);
  }
}

// One block: scale[0] = dloss[0] / max(counted, 1).
__global__ void BackwardScaleKernel(const int32_t* targets, int64_t rows, int32_t ignore_index,
                                    const float* dloss, float* scale) {
  double counted = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    counted += targets[r] != ignore_index ? 1.0 : 0.0;
  counted = BlockReduce(counted, SumOp(), 0.0);
  if (threadIdx.x == 0) scale[0] = dloss[0] / static_cast<float>(counted < 1.0 ? 1.0 : counted);
}

__global__ void CrossEntropyBackwardKernel(const float* probs, const int32_t* targets,
                                           int64_t rows, int64_t cols, int32_t ignore_index,
                                           float label_smoothing, const float* scale,
                                           float* dlogits) {
  const int64_t n = rows * cols;
  const float s = scale[0];
  const float uniform = label_smoothing / static_cast<float>(cols);
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    const int64_t r = i / cols, c = i % cols;
    const int32_t target = targets[r];
    if (target == ignore_index) {
      dlogits[i] = 0.0f;
      continue;
    }
    const float want = uniform + (c == target ? 1.0f - label_smoothing : 0.0f);
    dlogits[i] = s * (probs[i] - want);
  }
}

}  // namespace

int LaunchCrossEntropy(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                       int32_t ignore_index, float label_smoothing, float* loss, float* probs,
                       float* mean_loss) {
  if (rows > 0 && cols > 0) {
    TVLAB_LAUNCH(static_cast<unsigned>(rows), RowThreads(cols), 0, 0, CrossEntropyRowKernel)(
        logits, targets, cols, ignore_index, label_smoothing, loss, probs);
  }
  TVLAB_LAUNCH(1, 1024, 0, 0, MeanLossKernel)(loss, targets, rows, ignore_index, mean_loss);
  return static_cast<int>(cudaGetLastError());
}

size_t CrossEntropyBackwardScratchBytes() { return sizeof(float); }

int LaunchCrossEntropyBackward(const float* probs, const int32_t* targets, int64_t rows,
                               int64_t cols, int32_t ignore_index, float label_smoothing,
                               const float* dloss, float* dlogits, void* scratch) {
  if (rows <= 0 || cols <= 0) return 0;
  float* scale = static_cast<float*>(scratch);
  TVLAB_LAUNCH(1, 1024, 0, 0, BackwardScaleKernel)(targets, rows, ignore_index, dloss, scale);
  TVLAB_LAUNCH(GridFor(rows * cols), kThreads, 0, 0, CrossEntropyBackwardKernel)(
      probs, targets, rows, cols, ignore_index, label_smoothing, scale, dlogits);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
