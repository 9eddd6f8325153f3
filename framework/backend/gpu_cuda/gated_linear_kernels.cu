// The chunked gated-linear scan on the GPU: one thread per output element
// (a state entry, an output or gradient entry), each summing over its chunk
// directly from the in-chunk cumulative log-gates, so no thread depends on
// another inside a launch. The launches run in order on the one stream:
// cumulative gates, chunk states (sequential over chunks per state entry),
// outputs; backward: the same states, the state gradients carried back
// over the chunks, dv, dq/dk with the gates' per-token gradient, then the
// gates' gradient (a reverse sum inside each chunk). Every exp has a
// non-positive argument (framework/backend/gated_linear_scan.h).

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/gated_linear_kernels.h"
#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"

namespace tvlab {
namespace {

using cuda_util::GlobalIndex;
using cuda_util::GridFor;
using cuda_util::GridStride;
using cuda_util::kThreads;
using Sizes = GatedLinearScanSizes;

__device__ __forceinline__ int64_t Chunks(const Sizes& s) {
  return (s.tokens + s.chunk - 1) / s.chunk;
}
__device__ __forceinline__ int64_t ChunkEnd(const Sizes& s, int64_t c) {
  const int64_t end = (c + 1) * s.chunk;
  return end < s.tokens ? end : s.tokens;
}
// G_{t, x} of pair p (0 without gates).
__device__ __forceinline__ float Cum(const Sizes& s, const float* cum, int64_t p, int64_t t,
                                     int64_t x) {
  if (cum == nullptr) return 0.0f;
  return cum[(p * s.tokens + t) * s.gate_dim + (s.gate_dim == 1 ? 0 : x)];
}
// A_ij = sum_x q_ix k_jx exp(G_ix - G_jx) (j <= i in one chunk).
__device__ float Score(const Sizes& s, const float* q, const float* k, const float* cum,
                       int64_t p, int64_t i, int64_t j) {
  float a = 0.0f;
  for (int64_t x = 0; x < s.key_dim; ++x)
    a += q[(p * s.tokens + i) * s.key_dim + x] * k[(p * s.tokens + j) * s.key_dim + x] *
         expf(Cum(s, cum, p, i, x) - Cum(s, cum, p, j, x));
  return a;
}
__device__ float RowDot(const float* a, const float* b, int64_t n) {
  float d = 0.0f;
  for (int64_t e = 0; e < n; ++e) d += a[e] * b[e];
  return d;
}

// One thread per (pair, chunk, gate column).
__global__ void CumKernel(Sizes s, const float* g, float* cum) {
  const int64_t chunks = Chunks(s), n = s.pairs * chunks * s.gate_dim;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t col = idx % s.gate_dim, c = (idx / s.gate_dim) % chunks;
    const int64_t p = idx / (s.gate_dim * chunks);
    float run = 0.0f;
    for (int64_t t = c * s.chunk; t < ChunkEnd(s, c); ++t) {
      run += g[(p * s.tokens + t) * s.gate_dim + col];
      cum[(p * s.tokens + t) * s.gate_dim + col] = run;
    }
  }
}

// One thread per state entry (pair, x, e), over the chunks in order.
__global__ void StatesKernel(Sizes s, const float* k, const float* v, const float* cum,
                             const float* state, float* states, float* final_state) {
  const int64_t kd = s.key_dim, vd = s.value_dim, chunks = Chunks(s), n = s.pairs * kd * vd;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t e = idx % vd, x = (idx / vd) % kd, p = idx / (kd * vd);
    float st = state != nullptr ? state[idx] : 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      states[((p * chunks + c) * kd + x) * vd + e] = st;
      const int64_t last = ChunkEnd(s, c) - 1;
      const float gl = Cum(s, cum, p, last, x);
      float next = expf(gl) * st;
      for (int64_t j = c * s.chunk; j <= last; ++j)
        next += k[(p * s.tokens + j) * kd + x] * expf(gl - Cum(s, cum, p, j, x)) *
                v[(p * s.tokens + j) * vd + e];
      st = next;
    }
    final_state[idx] = st;
  }
}

// One thread per output entry (pair, i, e).
__global__ void OutKernel(Sizes s, const float* q, const float* k, const float* v,
                          const float* cum, const float* states, float* out) {
  const int64_t kd = s.key_dim, vd = s.value_dim, chunks = Chunks(s);
  const int64_t n = s.pairs * s.tokens * vd;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t e = idx % vd, i = (idx / vd) % s.tokens, p = idx / (vd * s.tokens);
    const int64_t c = i / s.chunk;
    float o = 0.0f;
    for (int64_t j = c * s.chunk; j <= i; ++j)
      o += Score(s, q, k, cum, p, i, j) * v[(p * s.tokens + j) * vd + e];
    const float* sc = states + (p * chunks + c) * kd * vd;
    for (int64_t x = 0; x < kd; ++x)
      o += q[(p * s.tokens + i) * kd + x] * expf(Cum(s, cum, p, i, x)) * sc[x * vd + e];
    out[idx] = o;
  }
}

// One thread per state entry: dstates[c] = the gradient of the state after
// chunk c, carried from the last chunk back; dstate = the starting state's.
__global__ void DStatesKernel(Sizes s, const float* q, const float* dout, const float* cum,
                              const float* dfinal, float* dstates, float* dstate) {
  const int64_t kd = s.key_dim, vd = s.value_dim, chunks = Chunks(s), n = s.pairs * kd * vd;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t e = idx % vd, x = (idx / vd) % kd, p = idx / (kd * vd);
    float ds = dfinal != nullptr ? dfinal[idx] : 0.0f;
    for (int64_t c = chunks - 1; c >= 0; --c) {
      dstates[((p * chunks + c) * kd + x) * vd + e] = ds;
      const int64_t last = ChunkEnd(s, c) - 1;
      float prev = expf(Cum(s, cum, p, last, x)) * ds;
      for (int64_t i = c * s.chunk; i <= last; ++i)
        prev += q[(p * s.tokens + i) * kd + x] * expf(Cum(s, cum, p, i, x)) *
                dout[(p * s.tokens + i) * vd + e];
      ds = prev;
    }
    if (dstate != nullptr) dstate[idx] = ds;
  }
}

// One thread per value gradient entry (pair, j, e).
__global__ void DvKernel(Sizes s, const float* q, const float* k, const float* dout,
                         const float* cum, const float* dstates, float* dv) {
  const int64_t kd = s.key_dim, vd = s.value_dim, chunks = Chunks(s);
  const int64_t n = s.pairs * s.tokens * vd;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t e = idx % vd, j = (idx / vd) % s.tokens, p = idx / (vd * s.tokens);
    const int64_t c = j / s.chunk, last = ChunkEnd(s, c) - 1;
    float g = 0.0f;
    for (int64_t i = j; i <= last; ++i)
      g += Score(s, q, k, cum, p, i, j) * dout[(p * s.tokens + i) * vd + e];
    const float* ds = dstates + (p * chunks + c) * kd * vd;
    for (int64_t x = 0; x < kd; ++x)
      g += k[(p * s.tokens + j) * kd + x] *
           expf(Cum(s, cum, p, last, x) - Cum(s, cum, p, j, x)) * ds[x * vd + e];
    dv[idx] = g;
  }
}

// One thread per key entry (pair, i, x): dq, dk and (with gates) the
// cumulative gate's gradient q dq - k dk (+ S' . dS' at a chunk's end).
__global__ void DqDkKernel(Sizes s, const float* q, const float* k, const float* v,
                           const float* dout, const float* cum, const float* states,
                           const float* final_state, const float* dstates, float* dq, float* dk,
                           float* dcum) {
  const int64_t kd = s.key_dim, vd = s.value_dim, chunks = Chunks(s), T = s.tokens;
  for (int64_t idx = GlobalIndex(); idx < s.pairs * T * kd; idx += GridStride()) {
    const int64_t x = idx % kd, i = (idx / kd) % T, p = idx / (kd * T);
    const int64_t c = i / s.chunk, first = c * s.chunk, last = ChunkEnd(s, c) - 1;
    const float gi = Cum(s, cum, p, i, x);
    const float* sc = states + ((p * chunks + c) * kd + x) * vd;
    const float* ds = dstates + ((p * chunks + c) * kd + x) * vd;
    const float* dout_i = dout + (p * T + i) * vd;
    const float* v_i = v + (p * T + i) * vd;
    float gq = expf(gi) * RowDot(sc, dout_i, vd);
    for (int64_t j = first; j <= i; ++j)
      gq += RowDot(dout_i, v + (p * T + j) * vd, vd) * k[(p * T + j) * kd + x] *
            expf(gi - Cum(s, cum, p, j, x));
    float gk = expf(Cum(s, cum, p, last, x) - gi) * RowDot(ds, v_i, vd);
    for (int64_t j = i; j <= last; ++j)
      gk += RowDot(dout + (p * T + j) * vd, v_i, vd) * q[(p * T + j) * kd + x] *
            expf(Cum(s, cum, p, j, x) - gi);
    dq[idx] = gq;
    dk[idx] = gk;
    if (dcum == nullptr) continue;
    float gc = q[idx] * gq - k[idx] * gk;
    if (i == last) {
      const float* after = (c + 1 < chunks ? states + (p * chunks + c + 1) * kd * vd
                                           : final_state + p * kd * vd) + x * vd;
      gc += RowDot(after, ds, vd);
    }
    dcum[idx] = gc;
  }
}

// One thread per gate entry (pair, l, col): the sum of dcum over the rest
// of l's chunk (over every key dimension for a per-head gate).
__global__ void DGateKernel(Sizes s, const float* dcum, float* dlog_gate) {
  const int64_t kd = s.key_dim, gd = s.gate_dim, T = s.tokens;
  for (int64_t idx = GlobalIndex(); idx < s.pairs * T * gd; idx += GridStride()) {
    const int64_t col = idx % gd, l = (idx / gd) % T, p = idx / (gd * T);
    const int64_t last = ChunkEnd(s, l / s.chunk) - 1;
    float g = 0.0f;
    for (int64_t i = l; i <= last; ++i) {
      const float* row = dcum + (p * T + i) * kd;
      if (gd == 1) {
        for (int64_t x = 0; x < kd; ++x) g += row[x];
      } else {
        g += row[col];
      }
    }
    dlog_gate[idx] = g;
  }
}

int Check() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

int LaunchGatedLinearScan(const GatedLinearScanSizes& s, const float* q, const float* k,
                          const float* v, const float* log_gate, const float* state, float* out,
                          float* final_state, float* cum, float* states) {
  const int64_t chunks = (s.tokens + s.chunk - 1) / s.chunk;
  const float* g = log_gate != nullptr ? cum : nullptr;
  if (g != nullptr && s.tokens > 0) {
    TVLAB_LAUNCH(GridFor(s.pairs * chunks * s.gate_dim), kThreads, 0, 0, CumKernel)(s, log_gate, cum);
    if (int err = Check()) return err;
  }
  TVLAB_LAUNCH(GridFor(s.pairs * s.key_dim * s.value_dim), kThreads, 0, 0, StatesKernel)(
      s, k, v, g, state, states, final_state);
  if (int err = Check()) return err;
  if (s.tokens == 0) return 0;
  TVLAB_LAUNCH(GridFor(s.pairs * s.tokens * s.value_dim), kThreads, 0, 0, OutKernel)(
      s, q, k, v, g, states, out);
  return Check();
}

int LaunchGatedLinearScanBackward(const GatedLinearScanSizes& s, const float* q, const float* k,
                                  const float* v, const float* log_gate, const float* state,
                                  const float* dout, const float* dfinal_state, float* dq,
                                  float* dk, float* dv, float* dlog_gate, float* dstate,
                                  float* cum, float* states, float* final_state, float* dstates,
                                  float* dcum) {
  const int64_t chunks = (s.tokens + s.chunk - 1) / s.chunk;
  const float* g = log_gate != nullptr ? cum : nullptr;
  if (g != nullptr && s.tokens > 0) {
    TVLAB_LAUNCH(GridFor(s.pairs * chunks * s.gate_dim), kThreads, 0, 0, CumKernel)(s, log_gate, cum);
    if (int err = Check()) return err;
  }
  const int64_t state_entries = s.pairs * s.key_dim * s.value_dim;
  TVLAB_LAUNCH(GridFor(state_entries), kThreads, 0, 0, StatesKernel)(s, k, v, g, state, states,
                                                                     final_state);
  if (int err = Check()) return err;
  TVLAB_LAUNCH(GridFor(state_entries), kThreads, 0, 0, DStatesKernel)(s, q, dout, g, dfinal_state,
                                                                      dstates, dstate);
  if (int err = Check()) return err;
  if (s.tokens == 0) return 0;
  TVLAB_LAUNCH(GridFor(s.pairs * s.tokens * s.value_dim), kThreads, 0, 0, DvKernel)(
      s, q, k, dout, g, dstates, dv);
  if (int err = Check()) return err;
  float* dc = g != nullptr ? dcum : nullptr;
  TVLAB_LAUNCH(GridFor(s.pairs * s.tokens * s.key_dim), kThreads, 0, 0, DqDkKernel)(
      s, q, k, v, dout, g, states, final_state, dstates, dq, dk, dc);
  if (int err = Check()) return err;
  if (dc == nullptr) return 0;
  TVLAB_LAUNCH(GridFor(s.pairs * s.tokens * s.gate_dim), kThreads, 0, 0, DGateKernel)(s, dc,
                                                                                     dlog_gate);
  return Check();
}

}  // namespace tvlab
