#ifndef TVLAB_FRAMEWORK_AUTOGRAD_GATED_LINEAR_OPS_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_GATED_LINEAR_OPS_H_

// The fused chunked gated-linear scan as one autograd op
// (Backend::GatedLinearScan and its backward; the math in
// framework/backend/gated_linear_scan.h). The attention kit's
// GatedLinearChunked (framework/attention/gated_linear.h) calls it when the
// backend implements the kernels.

#include <cstdint>

#include "framework/autograd/var.h"

namespace tvlab {

struct GatedLinearScanVars {
  Var out;    // (B, H, T, dv)
  Var state;  // (B, H, dk, dv) after the last token
};

// q, k (B, H, T, dk); v (B, H, T, dv); log_gate (B, H, T, dk), (B, H, T, 1)
// or undefined (no gate); state (B, H, dk, dv) or undefined (zero); chunk
// >= 1. Gradients reach q, k, v, log_gate and state from either output.
// REQUIRES: the current backend implements kGatedLinearScan and
// kGatedLinearScanBackward.
GatedLinearScanVars GatedLinearScan(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                                    const Var& state, int64_t chunk);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_GATED_LINEAR_OPS_H_
