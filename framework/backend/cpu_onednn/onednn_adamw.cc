// cpu_onednn's AdamW: the reference's arithmetic, and AdamWMany as one
// threaded pass over chunks of every parameter tensor.

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/isa_clones.h"

namespace tvlab {
namespace {

using onednn::kParallelOptimizerElements;

// The reference's AdamW arithmetic over elements [0, n) of one tensor; the
// per-step constants come from AdamWConstants, so every caller (one tensor,
// or a chunk of one in AdamWMany) computes the same values.
struct AdamWConstants {
  float step_size, bc2_sqrt, decay, beta1, beta2, eps;
};

AdamWConstants ConstantsFor(const AdamWHyper& h, float weight_decay) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step));
  return {static_cast<float>(h.lr / bc1), static_cast<float>(std::sqrt(bc2)),
          1.0f - h.lr * weight_decay, h.beta1, h.beta2, h.eps};
}

// Cloned for AVX2: the same IEEE multiplies, adds, divides and square
// roots per element as the SSE2 default (no FMA), twice as wide.
TVLAB_CLONED_LOOP void AdamWRangeLoop(const AdamWConstants& k, float* param, const float* grad, float* m, float* v,
                                      int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    param[i] *= k.decay;
    m[i] = k.beta1 * m[i] + (1.0f - k.beta1) * grad[i];
    v[i] = k.beta2 * v[i] + (1.0f - k.beta2) * grad[i] * grad[i];
    const float denom = std::sqrt(v[i]) / k.bc2_sqrt + k.eps;
    param[i] -= k.step_size * m[i] / denom;
  }
}

void AdamWRange(const AdamWConstants& k, float* param, const float* grad, float* m, float* v, int64_t n) {
  RunIsaClone<AdamWRangeLoop, CloneIsa::kAvx2>(k, param, grad, m, v, n);
}

// AdamWMany's unit of work: elements [begin, begin + n) of tensor `tensor`.
struct AdamWChunk {
  size_t tensor;
  int64_t begin, n;
};
constexpr int64_t kAdamWChunkElements = int64_t{1} << 14;

}  // namespace

void OnednnBackend::AdamW(float* param, const float* grad, float* m, float* v, int64_t n,
                          const AdamWHyper& h) {
  AdamWMany({{param, grad, m, v, n, h.weight_decay}}, h);
}

// Every tensor cut into chunks of 2^14 elements, and one OpenMP loop over the
// chunks of all of them: small tensors (biases, norms) no longer run alone,
// and one parallel region serves the whole step.
void OnednnBackend::AdamWMany(const std::vector<AdamWTensor>& tensors, const AdamWHyper& h) {
  std::vector<AdamWConstants> constants;
  std::vector<AdamWChunk> chunks;
  int64_t total = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    constants.push_back(ConstantsFor(h, tensors[t].weight_decay));
    for (int64_t b = 0; b < tensors[t].n; b += kAdamWChunkElements)
      chunks.push_back({t, b, std::min(kAdamWChunkElements, tensors[t].n - b)});
    total += tensors[t].n;
  }
  const int64_t count = static_cast<int64_t>(chunks.size());
  onednn::ForEachIndex(total >= kParallelOptimizerElements, count, [&](int64_t c) {
    const AdamWChunk& k = chunks[c];
    const AdamWTensor& t = tensors[k.tensor];
    AdamWRange(constants[k.tensor], t.param + k.begin, t.grad + k.begin, t.m + k.begin,
               t.v + k.begin, k.n);
  });
}

}  // namespace tvlab
