// The loops of cpu_onednn's Binary and ReLU kernels (elementwise_loops.h),
// shared by its Binary and Unary kernels (onednn_elementwise.cc) and its
// PointwiseChain (onednn_pointwise_chain.cc).

#include "framework/backend/cpu_onednn/elementwise_loops.h"

#include "framework/core/isa_clones.h"

namespace tvlab {
namespace onednn {
namespace {

// out[i] = f(a, b) for i in [begin, end), where one operand repeats a
// trailing block (na or nb elements; a scalar is a block of 1) over the
// other; begin and end are multiples of the block.
template <typename F>
inline __attribute__((always_inline)) void BinaryRange(F f, const float* a, int64_t na, const float* b, int64_t nb,
                                                       float* out, int64_t n, int64_t begin, int64_t end) {
  if (na == n && nb == n) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) out[i] = f(a[i], b[i]);
  } else if (na == n && nb == 1) {
    const float s = b[0];
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) out[i] = f(a[i], s);
  } else if (nb == n && na == 1) {
    const float s = a[0];
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) out[i] = f(s, b[i]);
  } else if (na == n) {  // e.g. (B, T, C) + bias (C)
    for (int64_t i = begin; i < end; i += nb)
#pragma omp simd
      for (int64_t j = 0; j < nb; ++j) out[i + j] = f(a[i + j], b[j]);
  } else {
    for (int64_t i = begin; i < end; i += na)
#pragma omp simd
      for (int64_t j = 0; j < na; ++j) out[i + j] = f(a[j], b[i + j]);
  }
}

// BinaryRange for `op`, built for AVX-512 and AVX2 (isa_clones.h): each
// element is one exactly rounded add, subtract, multiply or divide, the
// same bits at any vector width.
TVLAB_CLONED_LOOP void BinaryChunkLoop(BinaryOp op, const float* a, int64_t na, const float* b, int64_t nb, float* out,
                                       int64_t n, int64_t begin, int64_t end) {
  switch (op) {
    case BinaryOp::kAdd: return BinaryRange([](float x, float y) { return x + y; }, a, na, b, nb, out, n, begin, end);
    case BinaryOp::kSub: return BinaryRange([](float x, float y) { return x - y; }, a, na, b, nb, out, n, begin, end);
    case BinaryOp::kMul: return BinaryRange([](float x, float y) { return x * y; }, a, na, b, nb, out, n, begin, end);
    case BinaryOp::kDiv: return BinaryRange([](float x, float y) { return x / y; }, a, na, b, nb, out, n, begin, end);
  }
}

// ReLU and its gradient as oneDNN's eltwise_relu (alpha 0) computes them,
// bit for bit (onednn_loops_test checks both against the primitive, NaN,
// signed zeros and denormals included): y = x > 0 ? x : 0, and
// dx = x <= 0 ? dy * 0 : dy (so a NaN x passes dy, and a negative dy at
// x <= 0 gives -0). Plain loops, built for AVX-512 and AVX2: the
// primitive's call and memory objects cost as much as the pass.
TVLAB_CLONED_LOOP void ReluLoop(const float* x, float* y, int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

TVLAB_CLONED_LOOP void ReluBackwardLoop(const float* x, const float* dy, float* dx, int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) dx[i] = x[i] <= 0.0f ? dy[i] * 0.0f : dy[i];
}

}  // namespace

void BinaryChunk(BinaryOp op, const float* a, int64_t na, const float* b, int64_t nb, float* out, int64_t n,
                 int64_t begin, int64_t end) {
  RunIsaClone<BinaryChunkLoop>(op, a, na, b, nb, out, n, begin, end);
}

void ReluRange(const float* x, float* y, int64_t begin, int64_t end) { RunIsaClone<ReluLoop>(x, y, begin, end); }

void ReluBackwardRange(const float* x, const float* dy, float* dx, int64_t begin, int64_t end) {
  RunIsaClone<ReluBackwardLoop>(x, dy, dx, begin, end);
}

}  // namespace onednn
}  // namespace tvlab
