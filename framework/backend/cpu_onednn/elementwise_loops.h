#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ELEMENTWISE_LOOPS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ELEMENTWISE_LOOPS_H_

// The loops of cpu_onednn's Binary and ReLU kernels
// (elementwise_loops.cc), run by those kernels (onednn_elementwise.cc) and
// by its PointwiseChain on each tile (onednn_pointwise_chain.cc): one loop,
// so the same bits either way.

#include <cstdint>

#include "framework/backend/backend.h"

namespace tvlab {
namespace onednn {

// out[i] = a op b for i in [begin, end), where one operand repeats a
// trailing block (na or nb elements; a scalar is a block of 1) over the
// other (na == nb == n: elementwise); begin and end are multiples of the
// block. Each element one exactly rounded IEEE operation.
void BinaryChunk(BinaryOp op, const float* a, int64_t na, const float* b, int64_t nb, float* out, int64_t n,
                 int64_t begin, int64_t end);

// y[i] = x[i] > 0 ? x[i] : 0 for i in [begin, end): oneDNN's eltwise_relu
// (alpha 0), bit for bit.
void ReluRange(const float* x, float* y, int64_t begin, int64_t end);

// dx[i] = x[i] <= 0 ? dy[i] * 0 : dy[i] for i in [begin, end): oneDNN's
// ReLU backward, bit for bit (a NaN x passes dy; a negative dy at x <= 0
// gives -0).
void ReluBackwardRange(const float* x, const float* dy, float* dx, int64_t begin, int64_t end);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_ELEMENTWISE_LOOPS_H_
