// ReferenceBackend's kernels of a training step beyond the model: the
// dropout mask (Philox), the sum of squares for the gradient norm, AdamW.

#include <cmath>
#include <vector>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::DropoutMask(const RngStream& stream, float p, float* mask, int64_t n) {
  std::vector<uint32_t> words;
  DropoutFactors(stream, p, 0, n, mask, words);
}

void ReferenceBackend::SumSquares(const float* x, int64_t n, double* acc) {
  double sum = *acc;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  *acc = sum;
}

void ReferenceBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                             const AdamWHyper& h) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step));
  const float step_size = static_cast<float>(h.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  for (int64_t i = 0; i < n; ++i) {
    param[i] *= 1.0f - h.lr * h.weight_decay;
    m[i] = h.beta1 * m[i] + (1.0f - h.beta1) * grad[i];
    v[i] = h.beta2 * v[i] + (1.0f - h.beta2) * grad[i] * grad[i];
    float denom = std::sqrt(v[i]) / bc2_sqrt + h.eps;
    param[i] -= step_size * m[i] / denom;
  }
}

}  // namespace tvlab
