#ifndef TVLAB_FRAMEWORK_BACKEND_GATED_LINEAR_SCAN_H_
#define TVLAB_FRAMEWORK_BACKEND_GATED_LINEAR_SCAN_H_

// GatedLinearScanDesc: what the fused chunked gated-linear kernels
// (Backend::GatedLinearScan and its backward, kernels.def) compute. Per
// batch row b and head h, with a state S (dk, dv) that starts at S_0 (zero
// when no state is given):
//
//   S_t = diag(exp(g_t)) S_{t-1} + k_t^T v_t,     o_t = q_t S_t
//
// (framework/attention/gated_linear.h has the math.) The sequence is cut
// into chunks of `chunk` tokens (the last may be shorter). Inside a chunk
// starting at t0, with the in-chunk cumulative log-gate
// G_i = g_{t0} + ... + g_i (0 without gates) and S the state before it:
//
//   o_i  = sum_{t0<=j<=i} (sum_d q_id k_jd exp(G_id - G_jd)) v_j
//          + sum_d q_id exp(G_id) S_d
//   S'_d = exp(G_last,d) S_d + sum_j k_jd exp(G_last,d - G_jd) v_j
//
// Every exp has a non-positive argument (g <= 0 and j <= i): no overflow,
// whatever the gates. Nothing of size (C, C, dk) or (T, T) outlives a chunk.
// The backward recomputes the chunks' starting states (no saved
// activations beyond the inputs) and carries dS back from the last chunk.
//
// Layouts (contiguous, row-major): q, k (B, H, T, dk); v (B, H, T, dv);
// log_gate (B, H, T, gate_dim) with gate_dim = dk (per key dimension), 1
// (per head, broadcast over dk) or 0 (no gate: the pointer is null); state
// (B, H, dk, dv), null for a zero state; out (B, H, T, dv).

#include <cstdint>
#include <vector>

namespace tvlab {

struct GatedLinearScanDesc {
  int64_t batch = 0, heads = 0, tokens = 0, key_dim = 0, value_dim = 0;
  int64_t gate_dim = 0;  // 0, 1 or key_dim
  int64_t chunk = 1;     // >= 1
  int64_t chunks() const { return (tokens + chunk - 1) / chunk; }
};

// Stops the process unless d is well formed (dims >= 1, tokens >= 0,
// gate_dim in {0, 1, key_dim}, chunk >= 1). Internal callers only.
void CheckGatedLinearScanDesc(const GatedLinearScanDesc& d);

// The host kernels of one (b, h) pair, shared by the CPU backends
// (reference: every pair in turn; cpu_onednn: pairs over threads). Pointers
// are at the pair's slice of each buffer: q + (b * H + h) * T * dk, ...
// Scratch is reused across calls (one per thread).
namespace gated_linear_scan {

struct Scratch {
  std::vector<float> cum;      // (n, max(gate_dim, 1)): in-chunk cumulative log-gates
  std::vector<float> decay;    // (n, n, dk): exp(G_id - G_jd) for j <= i
  std::vector<float> scores;   // (n, n): the decayed q.k for j <= i
  std::vector<float> read;     // (n, dk): exp(G_id), the state's read factors
  std::vector<float> write;    // (n, dk): exp(G_last,d - G_jd), the state's write factors
  std::vector<float> state;    // (dk, dv): the running state
  std::vector<float> states;   // (chunks, dk, dv): each chunk's starting state (backward)
  std::vector<float> dstate;   // (dk, dv): the gradient of the state after the chunk
  std::vector<float> dscores;  // (n, n): dout_i . v_j
  std::vector<float> dcum;     // (n, dk): gradient of the cumulative log-gates
};

// out (T, dv) and final_state (dk, dv) of one pair; log_gate and state may
// be null (no gate, zero state).
void ForwardPair(const GatedLinearScanDesc& d, const float* q, const float* k, const float* v,
                 const float* log_gate, const float* state, float* out, float* final_state,
                 Scratch* scratch);

// Gradients of one pair, all overwritten: dq, dk (T, dk), dv (T, dv),
// dlog_gate (T, gate_dim; null without gates), dstate (dk, dv; may be null
// when not wanted). dfinal_state (dk, dv) may be null (zero).
void BackwardPair(const GatedLinearScanDesc& d, const float* q, const float* k, const float* v,
                  const float* log_gate, const float* state, const float* dout,
                  const float* dfinal_state, float* dq, float* dk, float* dv, float* dlog_gate,
                  float* dstate, Scratch* scratch);

}  // namespace gated_linear_scan
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GATED_LINEAR_SCAN_H_
