// cpu_onednn's SGD and Lion over many tensors: the reference's arithmetic
// per element, as one threaded pass over 2^14-element chunks of every
// tensor (as AdamWMany), so the results equal the reference's bit for bit.
// And the sum of squares of gradient clipping, in 32 double lanes.

#include <algorithm>
#include <vector>

#include "framework/backend/cpu_onednn/double_lanes.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"

namespace tvlab {
namespace {

using onednn::kParallelOptimizerElements;

// Elements [begin, begin + n) of tensor `tensor`.
struct Chunk {
  size_t tensor;
  int64_t begin, n;
};
constexpr int64_t kChunkElements = int64_t{1} << 14;

// Runs `range(tensor, begin, n)` over every chunk of `tensors`, threaded
// when they hold kParallelOptimizerElements or more elements in all.
template <typename Range>
void ForEachChunk(const std::vector<AdamWTensor>& tensors, const Range& range) {
  std::vector<Chunk> chunks;
  int64_t total = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    for (int64_t b = 0; b < tensors[t].n; b += kChunkElements)
      chunks.push_back({t, b, std::min(kChunkElements, tensors[t].n - b)});
    total += tensors[t].n;
  }
  const int64_t count = static_cast<int64_t>(chunks.size());
#pragma omp parallel for if (total >= kParallelOptimizerElements) schedule(static)
  for (int64_t c = 0; c < count; ++c) range(tensors[chunks[c].tensor], chunks[c].begin, chunks[c].n);
}

// The sum of x's squares in double: element i's square (exact in double)
// into lane i % 32 of four sets of eight (DoubleLanes), those added in a
// fixed tree, then the last n % 32 in order. The reference adds the
// squares one after another, a chain of dependent double adds (about 4
// cycles an element); here 32 chains run side by side. Other bits than the
// reference's (the conformance suite compares within 1e-9), but every
// build makes the same operations (no FMA: -ffp-contract=off), so every
// machine the same bits.
template <bool kOneVector>
TVLAB_CLONED_LOOP double SumOfSquaresLoop(const float* x, int64_t n) {
  using onednn::DoubleLanes;
  DoubleLanes<kOneVector> lanes[4];
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int v = 0; v < 4; ++v) lanes[v].AddSquaresOf(x + i + 8 * v);
  lanes[0] += lanes[1];  // (0 + 1) + (2 + 3)
  lanes[2] += lanes[3];
  lanes[0] += lanes[2];
  double total = onednn::TreeSum(lanes[0]);
  for (; i < n; ++i) total += static_cast<double>(x[i]) * x[i];
  return total;
}

double SumOfSquares(const float* x, int64_t n) {
  return RunIsaCloneByWidth<SumOfSquaresLoop<true>, SumOfSquaresLoop<false>>(x, n);
}

}  // namespace

void OnednnBackend::SumSquares(const float* x, int64_t n, double* acc) { *acc += SumOfSquares(x, n); }

void OnednnBackend::SgdMany(const std::vector<AdamWTensor>& tensors, const SgdHyper& h) {
  ForEachChunk(tensors, [&h](const AdamWTensor& t, int64_t begin, int64_t n) {
    float* param = t.param + begin;
    const float* grad = t.grad + begin;
    float* buf = t.m == nullptr ? nullptr : t.m + begin;
    for (int64_t i = 0; i < n; ++i) {
      float g = grad[i] + t.weight_decay * param[i];
      if (h.momentum != 0.0f) {
        buf[i] = h.momentum * buf[i] + g;
        g = h.nesterov ? g + h.momentum * buf[i] : buf[i];
      }
      param[i] -= h.lr * g;
    }
  });
}

void OnednnBackend::LionMany(const std::vector<AdamWTensor>& tensors, const LionHyper& h) {
  ForEachChunk(tensors, [&h](const AdamWTensor& t, int64_t begin, int64_t n) {
    const float decay = 1.0f - h.lr * t.weight_decay;
    float* param = t.param + begin;
    const float* grad = t.grad + begin;
    float* m = t.m + begin;
    for (int64_t i = 0; i < n; ++i) {
      const float c = h.beta1 * m[i] + (1.0f - h.beta1) * grad[i];
      const float sign = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : 0.0f;
      param[i] = param[i] * decay - h.lr * sign;
      m[i] = h.beta2 * m[i] + (1.0f - h.beta2) * grad[i];
    }
  });
}

}  // namespace tvlab
