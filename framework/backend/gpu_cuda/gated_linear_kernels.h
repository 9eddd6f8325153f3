#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GATED_LINEAR_KERNELS_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GATED_LINEAR_KERNELS_H_

// Launchers of the chunked gated-linear scan (kernels.def GatedLinearScan
// and GatedLinearScanBackward; the math in framework/backend/
// gated_linear_scan.h). They return the CUDA error code of their launches
// (0 = success). Every output element is written by one thread (no
// atomics); sums run in a fixed order.

#include <cstdint>

namespace tvlab {

// pairs = batch * heads; gate_dim 0 (no gate), 1 or key_dim.
struct GatedLinearScanSizes {
  int64_t pairs, tokens, key_dim, value_dim, gate_dim, chunk;
};

// Scratch the caller provides (device buffers):
//   cum    (pairs, T, gate_dim)         in-chunk cumulative log-gates (null without gates)
//   states (pairs, chunks, dk, dv)      each chunk's starting state
//   dstates (pairs, chunks, dk, dv)     the gradient of the state after each chunk (backward)
//   dcum   (pairs, T, dk)               the cumulative gates' gradient (backward, with gates)
int LaunchGatedLinearScan(const GatedLinearScanSizes& s, const float* q, const float* k,
                          const float* v, const float* log_gate, const float* state, float* out,
                          float* final_state, float* cum, float* states);
int LaunchGatedLinearScanBackward(const GatedLinearScanSizes& s, const float* q, const float* k,
                                  const float* v, const float* log_gate, const float* state,
                                  const float* dout, const float* dfinal_state, float* dq,
                                  float* dk, float* dv, float* dlog_gate, float* dstate,
                                  float* cum, float* states, float* final_state, float* dstates,
                                  float* dcum);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_GATED_LINEAR_KERNELS_H_
