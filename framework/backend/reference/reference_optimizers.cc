// ReferenceBackend's optimizer kernels beyond AdamW: SGD and Lion over many
// tensors, plain loops in the order of kernels.def's formulas.

#include <vector>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::SgdMany(const std::vector<AdamWTensor>& tensors, const SgdHyper& h) {
  for (const AdamWTensor& t : tensors) {
    for (int64_t i = 0; i < t.n; ++i) {
      float g = t.grad[i] + t.weight_decay * t.param[i];
      if (h.momentum != 0.0f) {
        t.m[i] = h.momentum * t.m[i] + g;
        g = h.nesterov ? g + h.momentum * t.m[i] : t.m[i];
      }
      t.param[i] -= h.lr * g;
    }
  }
}

void ReferenceBackend::LionMany(const std::vector<AdamWTensor>& tensors, const LionHyper& h) {
  for (const AdamWTensor& t : tensors) {
    const float decay = 1.0f - h.lr * t.weight_decay;
    for (int64_t i = 0; i < t.n; ++i) {
      const float c = h.beta1 * t.m[i] + (1.0f - h.beta1) * t.grad[i];
      const float sign = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
      t.param[i] = t.param[i] * decay - h.lr * sign;
      t.m[i] = h.beta2 * t.m[i] + (1.0f - h.beta2) * t.grad[i];
    }
  }
}

}  // namespace tvlab
