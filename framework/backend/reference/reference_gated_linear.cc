// ReferenceBackend's chunked gated-linear scan (kernels.def,
// gated_linear_scan.h): every (batch, head) pair in turn, by the shared
// per-pair loops of gated_linear_scan.cc.

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::GatedLinearScan(const GatedLinearScanDesc& d, const float* q,
                                       const float* k, const float* v, const float* log_gate,
                                       const float* state, float* out, float* final_state) {
  CheckGatedLinearScanDesc(d);
  const int64_t t = d.tokens, dk = d.key_dim, dv = d.value_dim, gd = d.gate_dim;
  gated_linear_scan::Scratch scratch;
  for (int64_t p = 0; p < d.batch * d.heads; ++p) {
    gated_linear_scan::ForwardPair(d, q + p * t * dk, k + p * t * dk, v + p * t * dv,
                                   log_gate != nullptr ? log_gate + p * t * gd : nullptr,
                                   state != nullptr ? state + p * dk * dv : nullptr,
                                   out + p * t * dv, final_state + p * dk * dv, &scratch);
  }
}

void ReferenceBackend::GatedLinearScanBackward(const GatedLinearScanDesc& d, const float* q,
                                               const float* k, const float* v,
                                               const float* log_gate, const float* state,
                                               const float* dout, const float* dfinal_state,
                                               float* dq, float* dk, float* dv, float* dlog_gate,
                                               float* dstate) {
  CheckGatedLinearScanDesc(d);
  const int64_t t = d.tokens, kd = d.key_dim, vd = d.value_dim, gd = d.gate_dim;
  gated_linear_scan::Scratch scratch;
  for (int64_t p = 0; p < d.batch * d.heads; ++p) {
    gated_linear_scan::BackwardPair(
        d, q + p * t * kd, k + p * t * kd, v + p * t * vd,
        log_gate != nullptr ? log_gate + p * t * gd : nullptr,
        state != nullptr ? state + p * kd * vd : nullptr, dout + p * t * vd,
        dfinal_state != nullptr ? dfinal_state + p * kd * vd : nullptr, dq + p * t * kd,
        dk + p * t * kd, dv + p * t * vd, dlog_gate != nullptr ? dlog_gate + p * t * gd : nullptr,
        dstate != nullptr ? dstate + p * kd * vd : nullptr, &scratch);
  }
}

}  // namespace tvlab
