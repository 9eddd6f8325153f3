// ReferenceBackend's row kernels: softmax, Layer/RMS normalization, cross
// entropy (each with its backward) and the argmax of rows.

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::Softmax(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, xr[c]);
    if (max == -std::numeric_limits<float>::infinity()) {
      for (int64_t c = 0; c < cols; ++c) yr[c] = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += (yr[c] = std::exp(xr[c] - max));
    for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<float>(yr[c] / sum);
  }
}

void ReferenceBackend::SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows,
                                       int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(yr[c]) * dyr[c];
    for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = yr[c] * (dyr[c] - static_cast<float>(dot));
  }
}

void ReferenceBackend::Normalize(const float* x, const float* gamma, const float* beta, float* y,
                                 float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                 bool subtract_mean) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double mu = 0.0;
    if (subtract_mean) {
      for (int64_t c = 0; c < cols; ++c) mu += xr[c];
      mu /= cols;
    }
    double var = 0.0;
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    var /= cols;
    float rs = static_cast<float>(1.0 / std::sqrt(var + eps));
    mean[r] = static_cast<float>(mu);
    rstd[r] = rs;
    for (int64_t c = 0; c < cols; ++c) {
      float v = (xr[c] - static_cast<float>(mu)) * rs;
      if (gamma) v *= gamma[c];
      if (beta) v += beta[c];
      y[r * cols + c] = v;
    }
  }
}

void ReferenceBackend::NormalizeBackward(const float* x, const float* gamma, const float* mean,
                                         const float* rstd, const float* dy, float* dx,
                                         float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                                         bool subtract_mean) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const float* dyr = dy + r * cols;
    // xhat = (x - mean) * rstd; g = dy * gamma.
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (LayerNorm)
    // dx = rstd * (g - xhat * mean(g * xhat))             (RMSNorm)
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      float xhat = (xr[c] - mean[r]) * rstd[r];
      float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      mean_g += g;
      mean_gx += static_cast<double>(g) * xhat;
      if (dgamma) dgamma[c] += dyr[c] * xhat;
      if (dbeta) dbeta[c] += dyr[c];
    }
    mean_g /= cols;
    mean_gx /= cols;
    if (!subtract_mean) mean_g = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      float xhat = (xr[c] - mean[r]) * rstd[r];
      float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      dx[r * cols + c] =
          rstd[r] * (g - static_cast<float>(mean_g) - xhat * static_cast<float>(mean_gx));
    }
  }
}

void ReferenceBackend::CrossEntropy(const float* logits, const int32_t* targets, int64_t rows,
                                    int64_t cols, int32_t ignore_index, float label_smoothing,
                                    float* loss, float* probs, float* mean_loss) {
  Softmax(logits, probs, rows, cols);
  int64_t counted = 0;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == ignore_index) {
      loss[r] = 0.0f;
      continue;
    }
    const float* lr = logits + r * cols;
    float max = lr[0];
    for (int64_t c = 1; c < cols; ++c) max = std::max(max, lr[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(lr[c] - max));
    double log_z = max + std::log(sum);
    // Smoothed target: (1 - eps) one-hot + eps / cols uniform (as PyTorch).
    double nll = log_z - lr[targets[r]];
    double mean_nll = 0.0;
    for (int64_t c = 0; c < cols; ++c) mean_nll += log_z - lr[c];
    mean_nll /= cols;
    loss[r] = static_cast<float>((1.0 - label_smoothing) * nll + label_smoothing * mean_nll);
    ++counted;
  }
  for (int64_t r = 0; r < rows; ++r) total += loss[r];
  const float denom = static_cast<float>(std::max<int64_t>(counted, 1));
  *mean_loss = static_cast<float>(total / denom);
}

namespace {
int64_t CountedRows(const int32_t* targets, int64_t rows, int32_t ignore_index) {
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; ++r) counted += targets[r] != ignore_index;
  return counted;
}
}  // namespace

void ReferenceBackend::CrossEntropyBackward(const float* probs, const int32_t* targets,
                                            int64_t rows, int64_t cols, int32_t ignore_index,
                                            float label_smoothing, const float* dloss,
                                            float* dlogits) {
  const float scale =
      dloss[0] / static_cast<float>(std::max<int64_t>(CountedRows(targets, rows, ignore_index), 1));
  for (int64_t r = 0; r < rows; ++r) {
    float* dr = dlogits + r * cols;
    if (targets[r] == ignore_index) {
      for (int64_t c = 0; c < cols; ++c) dr[c] = 0.0f;
      continue;
    }
    for (int64_t c = 0; c < cols; ++c) {
      float target = label_smoothing / cols + (c == targets[r] ? 1.0f - label_smoothing : 0.0f);
      dr[c] = scale * (probs[r * cols + c] - target);
    }
  }
}

void ReferenceBackend::ArgMaxRows(const float* x, int64_t rows, int64_t cols, int32_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (xr[c] > xr[best]) best = c;
    out[r] = static_cast<int32_t>(best);
  }
}

}  // namespace tvlab
