// cpu_onednn's row kernels: softmax (tvlab's all-masked rows give 0, where
// oneDNN's would give NaN) and its backward, LayerNorm on oneDNN's primitive
// (RMSNorm on the reference loops), the normalizations' backward, and
// Permute by contiguous rows; rows split over OpenMP threads above
// kParallelElements.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"

namespace tvlab {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using onednn::kParallelElements;
using onednn::SingleThreaded;

// One softmax row: y = exp(x - max) / sum, and log_z = max + log(sum) (the
// sum in float, as y's). oneDNN's softmax returns NaN for all-masked rows;
// tvlab defines them as 0 (log_z is then -inf). Softmax and CrossEntropy
// share it, so CrossEntropy's probabilities are Softmax's to the bit.
// Softmax alone passes kLogZ false and skips the logarithm (the same y).
template <bool kLogZ = true>
double SoftmaxRow(const float* x, float* y, int64_t cols) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < cols; ++c) max = x[c] > max ? x[c] : max;
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t c = 0; c < cols; ++c) y[c] = 0.0f;
    return max;
  }
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum += (y[c] = std::exp(x[c] - max));
  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
  return kLogZ ? max + std::log(static_cast<double>(sum)) : 0.0;
}

}  // namespace

void OnednnBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow</*kLogZ=*/false>(x + r * cols, y + r * cols, cols);
}

// Softmax's rows, keeping each row's log-partition max + log(sum): probs
// are Softmax's to the bit (the same float exponentials and sum), and the
// loss is the reference's formula with log_z from that float sum (within
// float rounding of the reference's double sum; PyTorch's is float too).
void OnednnBackend::CrossEntropy(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                                 int32_t ignore_index, float label_smoothing, float* loss, float* probs,
                                 float* mean_loss) {
#pragma omp parallel for if (rows * cols >= kParallelElements) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = logits + r * cols;
    const double log_z = SoftmaxRow(xr, probs + r * cols, cols);
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

void OnednnBackend::Normalize(const float* x, const float* gamma, const float* beta, float* y,
                              float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                              bool subtract_mean) {
  // oneDNN 2.6 has no RMSNorm; that case stays on the reference loops.
  if (!subtract_mean || rows == 0) {
    return ReferenceBackend::Normalize(x, gamma, beta, y, mean, rstd, rows, cols, eps,
                                       subtract_mean);
  }
  SingleThreaded small(rows * cols < kParallelElements);
  NormKey key{rows, cols, eps, gamma != nullptr, beta != nullptr};
  memory::desc data_md({rows, cols}, dt::f32, tag::ab);
  memory::desc stat_md({rows}, dt::f32, tag::a);
  memory::desc param_md({cols}, dt::f32, tag::a);
  auto it = norms_.find(key);
  if (it == norms_.end()) {
    auto flags = dnnl::normalization_flags::none;
    if (gamma) flags |= dnnl::normalization_flags::use_scale;
    if (beta) flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_training, data_md,
                                                 stat_md, eps, flags);
    it = norms_.emplace(key, dnnl::layer_normalization_forward({desc, engine_})).first;
  }
  std::vector<float> variance(rows);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(data_md, engine_, const_cast<float*>(x))},
      {DNNL_ARG_DST, memory(data_md, engine_, y)},
      {DNNL_ARG_MEAN, memory(stat_md, engine_, mean)},
      {DNNL_ARG_VARIANCE, memory(stat_md, engine_, variance.data())}};
  if (gamma) args.emplace(DNNL_ARG_SCALE, memory(param_md, engine_, const_cast<float*>(gamma)));
  if (beta) args.emplace(DNNL_ARG_SHIFT, memory(param_md, engine_, const_cast<float*>(beta)));
  it->second.execute(stream_, args);
  stream_.wait();
  for (int64_t r = 0; r < rows; ++r) rstd[r] = 1.0f / std::sqrt(variance[r] + eps);
}

void OnednnBackend::NormalizeBackward(const float* x, const float* gamma, const float* mean,
                                      const float* rstd, const float* dy, float* dx,
                                      float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                                      bool subtract_mean) {
  // The reference's math (LayerNorm, or RMSNorm without subtract_mean):
  //   xhat = (x - mean) * rstd; g = dy * gamma
  //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
  // with rows split over threads; dgamma/dbeta are summed per thread and the
  // partial sums added in thread order.
  const int threads = rows * cols >= kParallelElements ? omp_get_max_threads() : 1;
  std::vector<float> partial_g(dgamma ? threads * cols : 0, 0.0f);
  std::vector<float> partial_b(dbeta ? threads * cols : 0, 0.0f);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    float* pg = dgamma ? partial_g.data() + t * cols : nullptr;
    float* pb = dbeta ? partial_b.data() + t * cols : nullptr;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      const float mu = mean[r], rs = rstd[r];
      double mean_g = 0.0, mean_gx = 0.0;
#pragma omp simd reduction(+ : mean_g, mean_gx)
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - mu) * rs;
        const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
        mean_g += g;
        mean_gx += static_cast<double>(g) * xhat;
      }
      if (pg) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) pg[c] += dyr[c] * ((xr[c] - mu) * rs);
      }
      if (pb) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) pb[c] += dyr[c];
      }
      const float mg = subtract_mean ? static_cast<float>(mean_g / cols) : 0.0f;
      const float mgx = static_cast<float>(mean_gx / cols);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - mu) * rs;
        const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
        dxr[c] = rs * (g - mg - xhat * mgx);
      }
    }
  }
  for (int t = 0; t < threads; ++t) {
    for (int64_t c = 0; c < cols; ++c) {
      if (dgamma) dgamma[c] += partial_g[t * cols + c];
      if (dbeta) dbeta[c] += partial_b[t * cols + c];
    }
  }
}

void OnednnBackend::Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                            float* y) {
  const int rank = static_cast<int>(shape.size());
  if (rank == 0 || perm[rank - 1] != rank - 1) {
    return ReferenceBackend::Permute(x, shape, perm, y);
  }
  // The last dimension stays last: copy contiguous rows of it.
  const int64_t row = shape[rank - 1];
  Shape in_strides = ContiguousStrides(shape);
  Shape out_shape(rank - 1);
  for (int i = 0; i < rank - 1; ++i) out_shape[i] = shape[perm[i]];
  const int64_t rows = NumElements(out_shape);
  if (rows == 0) return;  // an empty dimension (and nothing to divide by below)
  if (rank == 4) {  // attention's head split and merge, (B, T, H, hs) <-> (B, H, T, hs): three loops
    const int64_t s0 = in_strides[perm[0]], s1 = in_strides[perm[1]], s2 = in_strides[perm[2]];
    const int64_t n0 = out_shape[0], n1 = out_shape[1], n2 = out_shape[2];
#pragma omp parallel for if (rows * row >= kParallelElements) schedule(static)
    for (int64_t i0 = 0; i0 < n0; ++i0) {
      for (int64_t i1 = 0; i1 < n1; ++i1) {
        const float* from = x + i0 * s0 + i1 * s1;
        float* to = y + (i0 * n1 + i1) * n2 * row;
        for (int64_t i2 = 0; i2 < n2; ++i2, from += s2, to += row)
          for (int64_t j = 0; j < row; ++j) to[j] = from[j];
      }
    }
    return;
  }
  const int outer = rank - 1;
  // Each thread's rows [first, last): the first row's index from its
  // number, then an odometer over out_shape (no division per row).
#pragma omp parallel if (rows * row >= kParallelElements)
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = rows * t / threads, last = rows * (t + 1) / threads;
    std::vector<int64_t> index(outer);
    int64_t src = 0, rest = first;
    for (int d = outer - 1; d >= 0; --d) {
      index[d] = rest % out_shape[d];
      rest /= out_shape[d];
      src += index[d] * in_strides[perm[d]];
    }
    for (int64_t r = first; r < last; ++r) {
      // A plain loop, not std::copy: rows are often 16-64 floats (a head),
      // where memmove's call costs as much as the copy.
      const float* from = x + src;
      float* to = y + r * row;
      for (int64_t j = 0; j < row; ++j) to[j] = from[j];
      for (int d = outer - 1; d >= 0; --d) {  // next row: carry like an odometer
        src += in_strides[perm[d]];
        if (++index[d] < out_shape[d]) break;
        src -= index[d] * in_strides[perm[d]];
        index[d] = 0;
      }
    }
  }
}

}  // namespace tvlab
