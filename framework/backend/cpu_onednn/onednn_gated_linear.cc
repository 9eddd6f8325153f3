// OnednnBackend's chunked gated-linear scan: the (batch, head) pairs over
// OpenMP threads, each thread with its own scratch, each pair by the shared
// per-pair loops of gated_linear_scan.cc (the reference's). Pairs are
// independent, so the result is the reference's bit for bit on any number
// of threads. One thread below kParallelElements multiply-adds per chunk
// row sweep (parallel.h).

#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"

namespace tvlab {
namespace {

bool Threaded(const GatedLinearScanDesc& d) {
  return d.batch * d.heads > 1 &&
         d.batch * d.heads * d.tokens * d.key_dim * d.value_dim >= onednn::kParallelElements;
}

}  // namespace

void OnednnBackend::GatedLinearScan(const GatedLinearScanDesc& d, const float* q, const float* k,
                                    const float* v, const float* log_gate, const float* state,
                                    float* out, float* final_state) {
  CheckGatedLinearScanDesc(d);
  const int64_t t = d.tokens, dk = d.key_dim, dv = d.value_dim, gd = d.gate_dim;
  const int64_t pairs = d.batch * d.heads;
#pragma omp parallel if (Threaded(d))
  {
    gated_linear_scan::Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t p = 0; p < pairs; ++p) {
      gated_linear_scan::ForwardPair(d, q + p * t * dk, k + p * t * dk, v + p * t * dv,
                                     log_gate != nullptr ? log_gate + p * t * gd : nullptr,
                                     state != nullptr ? state + p * dk * dv : nullptr,
                                     out + p * t * dv, final_state + p * dk * dv, &scratch);
    }
  }
}

void OnednnBackend::GatedLinearScanBackward(const GatedLinearScanDesc& d, const float* q,
                                            const float* k, const float* v,
                                            const float* log_gate, const float* state,
                                            const float* dout, const float* dfinal_state,
                                            float* dq, float* dk, float* dv, float* dlog_gate,
                                            float* dstate) {
  CheckGatedLinearScanDesc(d);
  const int64_t t = d.tokens, kd = d.key_dim, vd = d.value_dim, gd = d.gate_dim;
  const int64_t pairs = d.batch * d.heads;
#pragma omp parallel if (Threaded(d))
  {
    gated_linear_scan::Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t p = 0; p < pairs; ++p) {
      gated_linear_scan::BackwardPair(
          d, q + p * t * kd, k + p * t * kd, v + p * t * vd,
          log_gate != nullptr ? log_gate + p * t * gd : nullptr,
          state != nullptr ? state + p * kd * vd : nullptr, dout + p * t * vd,
          dfinal_state != nullptr ? dfinal_state + p * kd * vd : nullptr, dq + p * t * kd,
          dk + p * t * kd, dv + p * t * vd,
          dlog_gate != nullptr ? dlog_gate + p * t * gd : nullptr,
          dstate != nullptr ? dstate + p * kd * vd : nullptr, &scratch);
    }
  }
}

}  // namespace tvlab
