// cpu_onednn's elementwise kernels: Unary and its backward on oneDNN's
// eltwise primitives (cached per op and size; ReLU as a loop with the
// primitive's bits), Binary and ReduceSumTo as
// threaded loops for the broadcasts training meets (a trailing block
// repeated), the reference's loops otherwise; DropoutMask in cache-sized
// chunks. The Binary and ReLU loops are elementwise_loops.h's, which
// PointwiseChain runs tile by tile (onednn_pointwise_chain.cc).

#include <omp.h>

#include <algorithm>
#include <vector>

#include "framework/backend/cpu_onednn/elementwise_loops.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/check.h"
#include "framework/core/isa_clones.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace {
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using onednn::kParallelElements;
using onednn::SingleThreaded;
using onednn::BinaryChunk;
using onednn::ReluRange;
using onednn::ReluBackwardRange;

// oneDNN's eltwise algorithm and (alpha, beta) for each UnaryOp.
struct EltwiseAlgo {
  dnnl::algorithm algorithm;
  float alpha = 0.0f, beta = 0.0f;
};

EltwiseAlgo ToEltwise(UnaryOp op) {
  switch (op) {
    case UnaryOp::kRelu: return {dnnl::algorithm::eltwise_relu};
    case UnaryOp::kGeluErf: return {dnnl::algorithm::eltwise_gelu_erf};
    case UnaryOp::kGeluTanh: return {dnnl::algorithm::eltwise_gelu_tanh};
    case UnaryOp::kSilu: return {dnnl::algorithm::eltwise_swish, 1.0f};
    case UnaryOp::kSigmoid: return {dnnl::algorithm::eltwise_logistic};
    case UnaryOp::kTanh: return {dnnl::algorithm::eltwise_tanh};
    case UnaryOp::kExp: return {dnnl::algorithm::eltwise_exp};
    case UnaryOp::kLog: return {dnnl::algorithm::eltwise_log};
    case UnaryOp::kSqrt: return {dnnl::algorithm::eltwise_sqrt};
    case UnaryOp::kSquare: return {dnnl::algorithm::eltwise_square};
  }
  return {dnnl::algorithm::eltwise_relu};
}

// Right-aligns `shape` to `rank` dims with leading 1s.
Shape Align(const Shape& shape, size_t rank) {
  Shape out(rank - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// If `small` (aligned) equals `big` on a suffix and is 1 before it, returns
// the suffix length in elements; else -1. E.g. bias (C) vs (B, T, C) -> C.
int64_t TrailingBlock(const Shape& small, const Shape& big) {
  size_t first = 0;
  while (first < small.size() && small[first] == 1) ++first;
  for (size_t i = first; i < small.size(); ++i)
    if (small[i] != big[i]) return -1;
  int64_t block = 1;
  for (size_t i = first; i < small.size(); ++i) block *= small[i];
  return block;
}

// BinaryChunk over all n elements: split over threads from kParallelElements
// on, at multiples of the repeated block; every element is computed the same
// way either way.
void BinaryLoop(BinaryOp op, const float* a, int64_t na, const float* b, int64_t nb, float* out, int64_t n) {
  if (n < kParallelElements) return BinaryChunk(op, a, na, b, nb, out, n, 0, n);
  const int64_t block = na == n && nb == n ? 1 : std::min(na, nb);  // Binary checked n % block == 0
  const int64_t blocks = n / block;
#pragma omp parallel
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    BinaryChunk(op, a, na, b, nb, out, n, blocks * t / threads * block, blocks * (t + 1) / threads * block);
  }
}

// out[j] = sum over rows i in order of x[i * block + j], for the W columns
// from j0: the sums stay in registers down the rows (W a multiple of 16: one
// AVX-512 register per 16 columns).
template <int W>
inline __attribute__((always_inline)) void SumColumns(const float* x, int64_t n, int64_t block, int64_t j0,
                                                      float* out) {
  float sums[W] = {};
  for (int64_t i = 0; i < n; i += block) {
#pragma omp simd
    for (int w = 0; w < W; ++w) sums[w] += x[i + j0 + w];
  }
  for (int w = 0; w < W; ++w) out[j0 + w] = sums[w];
}

// ReduceSumTo's columns [j0, j1) of x viewed as (n / block, block). Up to
// 128 columns: 64 and then 16 at a time in registers, the rest one by one;
// wider ranges: one sweep down the rows adding each into out (the
// prefetcher follows it; 64-column sweeps made the GPT step's bias
// gradients 3x slower). Each column sums its rows in order from 0.0f either
// way (the same bits); cloned for AVX-512 and AVX2.
TVLAB_CLONED_LOOP void SumColumnRangeLoop(const float* x, int64_t n, int64_t block, int64_t j0, int64_t j1,
                                          float* out) {
  if (j1 - j0 > 128) {
    for (int64_t j = j0; j < j1; ++j) out[j] = 0.0f;
    for (int64_t i = 0; i < n; i += block)
#pragma omp simd
      for (int64_t j = j0; j < j1; ++j) out[j] += x[i + j];
    return;
  }
  int64_t j = j0;
  for (; j + 64 <= j1; j += 64) SumColumns<64>(x, n, block, j, out);
  for (; j + 16 <= j1; j += 16) SumColumns<16>(x, n, block, j, out);
  for (; j < j1; ++j) SumColumns<1>(x, n, block, j, out);
}

void SumColumnRange(const float* x, int64_t n, int64_t block, int64_t j0, int64_t j1, float* out) {
  RunIsaClone<SumColumnRangeLoop>(x, n, block, j0, j1, out);
}

// f(begin, end) over [0, n), split over threads from kParallelElements on.
template <typename F>
void SplitElements(int64_t n, F f) {
  if (n < kParallelElements) return f(0, n);
#pragma omp parallel
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    f(n * t / threads, n * (t + 1) / threads);
  }
}

bool OnOnednnEltwiseBackward(UnaryOp op) {
  return op == UnaryOp::kGeluErf || op == UnaryOp::kGeluTanh || op == UnaryOp::kSilu ||
         op == UnaryOp::kRelu;
}

}  // namespace

void OnednnBackend::Unary(UnaryOp op, const float* x, float* y, int64_t n) {
  if (n == 0) return;
  if (op == UnaryOp::kRelu) return SplitElements(n, [&](int64_t b, int64_t e) { ReluRange(x, y, b, e); });
  SingleThreaded small(n < kParallelElements);
  EltwiseKey key{static_cast<int>(op), n};
  memory::desc md({n}, dt::f32, tag::a);
  auto it = eltwise_.find(key);
  if (it == eltwise_.end()) {
    EltwiseAlgo algo = ToEltwise(op);
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algo.algorithm, md,
                                     algo.alpha, algo.beta);
    it = eltwise_.emplace(key, dnnl::eltwise_forward({desc, engine_})).first;
  }
  memory xm(md, engine_, const_cast<float*>(x)), ym(md, engine_, y);
  it->second.execute(stream_, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}});
  stream_.wait();
}

void OnednnBackend::UnaryBackward(UnaryOp op, const float* x, const float* y, const float* dy,
                                  float* dx, int64_t n) {
  if (n == 0 || !OnOnednnEltwiseBackward(op))
    return ReferenceBackend::UnaryBackward(op, x, y, dy, dx, n);
  if (op == UnaryOp::kRelu)
    return SplitElements(n, [&](int64_t b, int64_t e) { ReluBackwardRange(x, dy, dx, b, e); });
  SingleThreaded small(n < kParallelElements);
  EltwiseKey key{static_cast<int>(op), n};
  memory::desc md({n}, dt::f32, tag::a);
  auto it = eltwise_backward_.find(key);
  if (it == eltwise_backward_.end()) {
    EltwiseAlgo algo = ToEltwise(op);
    dnnl::eltwise_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, algo.algorithm, md, algo.alpha, algo.beta}, engine_);
    dnnl::eltwise_backward::desc desc(algo.algorithm, md, md, algo.alpha, algo.beta);
    it = eltwise_backward_.emplace(key, dnnl::eltwise_backward({desc, engine_, hint})).first;
  }
  // These algorithms differentiate from the input x (y is not needed).
  memory xm(md, engine_, const_cast<float*>(x)), dym(md, engine_, const_cast<float*>(dy)),
      dxm(md, engine_, dx);
  it->second.execute(stream_, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_SRC, dxm}});
  stream_.wait();
}

void OnednnBackend::Binary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                           const Shape& b_shape, float* out, const Shape& out_shape) {
  const size_t rank = out_shape.size();
  int64_t n = NumElements(out_shape);
  int64_t na = TrailingBlock(Align(a_shape, rank), out_shape);
  int64_t nb = TrailingBlock(Align(b_shape, rank), out_shape);
  bool fast = na > 0 && nb > 0 && (na == n || nb == n) && n % std::min(na, nb) == 0;
  if (!fast) return ReferenceBackend::Binary(op, a, a_shape, b, b_shape, out, out_shape);
  BinaryLoop(op, a, na, b, nb, out, n);
}

void OnednnBackend::ReduceSumTo(const float* x, const Shape& x_shape, float* out,
                                const Shape& out_shape) {
  int64_t n = NumElements(x_shape);
  int64_t block = TrailingBlock(Align(out_shape, x_shape.size()), x_shape);
  if (block <= 0) return ReferenceBackend::ReduceSumTo(x, x_shape, out, out_shape);
  // Sum over leading dims: out[j] = sum_i x[i * block + j], each thread
  // taking one column chunk (each column sums in the same order either way).
  const int threads = n >= kParallelElements ? omp_get_max_threads() : 1;
  const int64_t chunk = (block + threads - 1) / threads;
  if (threads == 1) return SumColumnRange(x, n, block, 0, block, out);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t j0 = 0; j0 < block; j0 += chunk) SumColumnRange(x, n, block, j0, std::min(block, j0 + chunk), out);
}

// The reference's mask (DropoutFactors), a chunk of kDropoutChunk elements
// at a time: each chunk's random words stay in L1 instead of a buffer of
// n / 2 words allocated and zeroed per call, and chunks split over threads
// for large masks. Chunks start at even elements (whole words), so every
// element is the same bits as the reference's.
void OnednnBackend::DropoutMask(const RngStream& stream, float p, float* mask, int64_t n) {
  constexpr int64_t kDropoutChunk = 2048;
  const int64_t chunks = (n + kDropoutChunk - 1) / kDropoutChunk;
#pragma omp parallel if (n >= onednn::kParallelOptimizerElements)
  {
    std::vector<uint32_t> words;  // host: one chunk's random words
    words.reserve(kDropoutChunk / 2);
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t first = c * kDropoutChunk;
      DropoutFactors(stream, p, first, std::min(kDropoutChunk, n - first), mask + first, words);
    }
  }
}

}  // namespace tvlab
