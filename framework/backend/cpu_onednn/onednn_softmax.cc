// cpu_onednn's softmax rows: Softmax, the probabilities of CrossEntropy
// and SoftmaxBackward. tvlab's all-masked rows give 0, where oneDNN's
// softmax would give NaN. Rows of at most kShortRow columns (the sort
// model's attention rows have 8 keys, its logits 10) go eight at a time,
// each row in a lane of the vectors; longer rows one at a time. Both give a
// row the same operations in the same order, so the same bits. Rows split
// over OpenMP threads above kParallelElements.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/exp_shifted.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"

namespace tvlab {
namespace {

using onednn::kParallelElements;
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// One softmax row: y = exp(x - max) / sum, and log_z = max + log(sum) (the
// sum in float, as y's). oneDNN's softmax returns NaN for all-masked rows;
// tvlab defines them as 0 (log_z is then -inf). Softmax and CrossEntropy
// share it, so CrossEntropy's probabilities are Softmax's to the bit.
// Softmax alone passes kLogZ false and skips the logarithm (the same y).
template <bool kLogZ = true>
double SoftmaxRow(const float* x, float* y, int64_t cols) {
  float max = kMinusInf;
  for (int64_t c = 0; c < cols; ++c) max = x[c] > max ? x[c] : max;
  if (max == kMinusInf) {
    for (int64_t c = 0; c < cols; ++c) y[c] = 0.0f;
    return max;
  }
  onednn::ExpShifted(x, max, y, cols);  // y[c] = std::exp(x[c] - max), eight at a time
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum += y[c];
  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
  return kLogZ ? max + std::log(static_cast<double>(sum)) : 0.0;
}

// Rows of at most this many columns take SoftmaxEightRows.
constexpr int64_t kShortRow = 16;
constexpr int kLanes = 8;

// Eight rows of x (8, cols), cols <= kShortRow, into y, each row as
// SoftmaxRow computes it: the max in column order, x - max's exponentials
// (ExpShiftedEach: std::exp's bits), their float sum in column order, the
// products with 1 / sum, zeros for an all -inf row; log_z[l] likewise. The
// rows sit in the lanes (transposed into xt), so one call computes all
// eight rows' exponentials.
// (GCC cannot see that cols <= kShortRow keeps ExpShiftedEach's reads
// within the rows written, and warns that they "may be used uninitialized".)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <bool kLogZ>
void SoftmaxEightRows(const float* x, float* y, int64_t cols, double* log_z) {
  float xt[kShortRow][kLanes], shift[kShortRow][kLanes], e[kShortRow][kLanes];  // host: stack scratch
  float max[kLanes], sum[kLanes], inv[kLanes];
  for (int l = 0; l < kLanes; ++l) max[l] = kMinusInf, sum[l] = 0.0f;
  for (int64_t c = 0; c < cols; ++c) {
    for (int l = 0; l < kLanes; ++l) {
      xt[c][l] = x[l * cols + c];
      max[l] = xt[c][l] > max[l] ? xt[c][l] : max[l];
    }
  }
  for (int64_t c = 0; c < cols; ++c)
    for (int l = 0; l < kLanes; ++l) shift[c][l] = max[l];
  onednn::ExpShiftedEach(&xt[0][0], &shift[0][0], &e[0][0], cols * kLanes);
  for (int64_t c = 0; c < cols; ++c)
    for (int l = 0; l < kLanes; ++l) sum[l] += e[c][l];
  for (int l = 0; l < kLanes; ++l) inv[l] = 1.0f / sum[l];
  for (int l = 0; l < kLanes; ++l) {
    const bool masked = max[l] == kMinusInf;
    for (int64_t c = 0; c < cols; ++c) y[l * cols + c] = masked ? 0.0f : e[c][l] * inv[l];
    if (kLogZ) log_z[l] = masked ? max[l] : max[l] + std::log(static_cast<double>(sum[l]));
  }
}
#pragma GCC diagnostic pop

// Softmax over `rows` rows; log_z (rows) as SoftmaxRow's when kLogZ.
template <bool kLogZ>
void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t cols, double* log_z) {
  const int64_t groups = cols <= kShortRow ? rows / kLanes : 0;  // the rest row by row
#pragma omp parallel if (rows * cols >= kParallelElements)
  {
#pragma omp for schedule(static) nowait
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t r = g * kLanes;
      SoftmaxEightRows<kLogZ>(x + r * cols, y + r * cols, cols, kLogZ ? log_z + r : nullptr);
    }
#pragma omp for schedule(static)
    for (int64_t r = groups * kLanes; r < rows; ++r) {
      const double z = SoftmaxRow<kLogZ>(x + r * cols, y + r * cols, cols);
      if (kLogZ) log_z[r] = z;
    }
  }
}

}  // namespace


void OnednnBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  SoftmaxRows</*kLogZ=*/false>(x, y, rows, cols, nullptr);
}

// Softmax's rows, keeping each row's log-partition max + log(sum): probs
// are Softmax's to the bit (the same float exponentials and sum), and the
// loss is the reference's formula with log_z from that float sum (within
// float rounding of the reference's double sum; PyTorch's is float too).
void OnednnBackend::CrossEntropy(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                                 int32_t ignore_index, float label_smoothing, float* loss, float* probs,
                                 float* mean_loss) {
  std::vector<double> log_zs(rows);  // host: each row's log-partition
  SoftmaxRows</*kLogZ=*/true>(logits, probs, rows, cols, log_zs.data());
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    const double log_z = log_zs[r];
    if (targets[r] == ignore_index) {
      loss[r] = 0.0f;
      continue;
    }
    if (log_z == -std::numeric_limits<double>::infinity()) {  // an all-masked row
      loss[r] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    // Smoothed target: (1 - eps) one-hot + eps / cols uniform (as PyTorch).
    const double nll = log_z - xr[targets[r]];
    double mean_nll = 0.0;
    if (label_smoothing != 0.0f) {
      for (int64_t c = 0; c < cols; ++c) mean_nll += log_z - xr[c];
      mean_nll /= cols;
    }
    loss[r] = static_cast<float>((1.0 - label_smoothing) * nll + label_smoothing * mean_nll);
  }
  int64_t counted = 0;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    counted += targets[r] != ignore_index;
    total += loss[r];
  }
  *mean_loss = static_cast<float>(total / static_cast<float>(std::max<int64_t>(counted, 1)));
}

void OnednnBackend::SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                                    int64_t cols) {
  // dx = y * (dy - sum(dy * y)) per row, the dot in double as the reference.
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(yr[c]) * dyr[c];
    const float d = static_cast<float>(dot);
    float* dxr = dx + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - d);
  }
}

}  // namespace tvlab
