// The fused chunked gated-linear scan of one (batch, head) pair, forward
// and backward (gated_linear_scan.h has the math). Plain loops whose inner
// loops run along contiguous rows (dk or dv), so the compiler vectorises
// them. The backward differentiates the chunk formulas term by term:
//
//   dA_ij  = dout_i . v_j                                   (j <= i)
//   dq_id  = sum_{j<=i} dA_ij k_jd exp(G_id - G_jd) + exp(G_id) (S_d . dout_i)
//   dk_jd  = sum_{i>=j} dA_ij q_id exp(G_id - G_jd) + exp(G_last,d - G_jd) (dS'_d . v_j)
//   dv_j   = sum_{i>=j} A_ij dout_i + sum_d k_jd exp(G_last,d - G_jd) dS'_d
//   dS_d   = exp(G_last,d) dS'_d + sum_i q_id exp(G_id) dout_i
//   dG_id  = q_id dq_id - k_id dk_id  (+ S'_d . dS'_d for the chunk's last i)
//   dg_l   = sum_{i>=l in the chunk} dG_i   (summed over d for a per-head gate)
//
// with dS' the gradient of the state after the chunk and S' that state.

#include "framework/backend/gated_linear_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "framework/core/check.h"

namespace tvlab {

void CheckGatedLinearScanDesc(const GatedLinearScanDesc& d) {
  TVLAB_CHECK(d.batch >= 1 && d.heads >= 1 && d.tokens >= 0 && d.key_dim >= 1 &&
              d.value_dim >= 1 && d.chunk >= 1)
      << "gated linear scan: bad sizes";
  TVLAB_CHECK(d.gate_dim == 0 || d.gate_dim == 1 || d.gate_dim == d.key_dim)
      << "gated linear scan: gate_dim " << d.gate_dim << " with key_dim " << d.key_dim;
}

namespace gated_linear_scan {
namespace {

// y += a * x over n values.
inline void Axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
inline float Dot(const float* x, const float* y, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

// The chunk's gate factors: cum (n, ge), read = exp(G_i) and
// write = exp(G_last - G_j), both (n, dk) (ones without gates).
void PrepareGates(const GatedLinearScanDesc& d, int64_t t0, int64_t n, const float* log_gate,
                  Scratch* s) {
  const int64_t dk = d.key_dim, gd = d.gate_dim, ge = std::max<int64_t>(gd, 1);
  s->cum.assign(n * ge, 0.0f);
  if (log_gate != nullptr) {
    for (int64_t c = 0; c < ge; ++c) {
      float run = 0.0f;
      for (int64_t i = 0; i < n; ++i) s->cum[i * ge + c] = run += log_gate[(t0 + i) * gd + c];
    }
  }
  s->read.resize(n * dk);
  s->write.resize(n * dk);
  const float* last = &s->cum[(n - 1) * ge];
  for (int64_t i = 0; i < n; ++i) {
    const float* ci = &s->cum[i * ge];
    for (int64_t x = 0; x < dk; ++x) {
      const int64_t c = ge == 1 ? 0 : x;
      s->read[i * dk + x] = std::exp(ci[c]);                 // G_i <= 0
      s->write[i * dk + x] = std::exp(last[c] - ci[c]);      // G_last - G_j <= 0
    }
  }
}

// decay (n, n, dk) = exp(G_i - G_j) and scores (n, n) = sum_d q_id k_jd
// decay_ijd, for j <= i (the rest is never read).
void PrepareScores(const GatedLinearScanDesc& d, int64_t t0, int64_t n, const float* q,
                   const float* k, Scratch* s) {
  const int64_t dk = d.key_dim, ge = std::max<int64_t>(d.gate_dim, 1);
  s->decay.resize(n * n * dk);
  s->scores.assign(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float* ci = &s->cum[i * ge];
    const float* qi = q + (t0 + i) * dk;
    for (int64_t j = 0; j <= i; ++j) {
      const float* cj = &s->cum[j * ge];
      float* e = &s->decay[(i * n + j) * dk];
      if (ge == 1) {
        std::fill(e, e + dk, std::exp(ci[0] - cj[0]));
      } else {
        for (int64_t x = 0; x < dk; ++x) e[x] = std::exp(ci[x] - cj[x]);
      }
      const float* kj = k + (t0 + j) * dk;
      float a = 0.0f;
      for (int64_t x = 0; x < dk; ++x) a += qi[x] * kj[x] * e[x];
      s->scores[i * n + j] = a;
    }
  }
}

// S (dk, dv) <- the state after the chunk: exp(G_last) S + sum_j (k_j *
// write_j)^T v_j.
void AdvanceState(const GatedLinearScanDesc& d, int64_t t0, int64_t n, const float* k,
                  const float* v, const Scratch& s, float* state) {
  const int64_t dk = d.key_dim, dv = d.value_dim;
  const float* last = &s.read[(n - 1) * dk];
  for (int64_t x = 0; x < dk; ++x) {
    float* row = state + x * dv;
    for (int64_t e = 0; e < dv; ++e) row[e] *= last[x];
    for (int64_t j = 0; j < n; ++j)
      Axpy(k[(t0 + j) * dk + x] * s.write[j * dk + x], v + (t0 + j) * dv, row, dv);
  }
}

void StartState(const GatedLinearScanDesc& d, const float* state, Scratch* s) {
  const int64_t size = d.key_dim * d.value_dim;
  if (state != nullptr) {
    s->state.assign(state, state + size);
  } else {
    s->state.assign(size, 0.0f);
  }
}

}  // namespace

void ForwardPair(const GatedLinearScanDesc& d, const float* q, const float* k, const float* v,
                 const float* log_gate, const float* state, float* out, float* final_state,
                 Scratch* s) {
  const int64_t dk = d.key_dim, dv = d.value_dim;
  StartState(d, state, s);
  for (int64_t t0 = 0; t0 < d.tokens; t0 += d.chunk) {
    const int64_t n = std::min(d.chunk, d.tokens - t0);
    PrepareGates(d, t0, n, log_gate, s);
    PrepareScores(d, t0, n, q, k, s);
    for (int64_t i = 0; i < n; ++i) {
      float* o = out + (t0 + i) * dv;  // (dv)
      std::fill(o, o + dv, 0.0f);
      for (int64_t j = 0; j <= i; ++j) Axpy(s->scores[i * n + j], v + (t0 + j) * dv, o, dv);
      for (int64_t x = 0; x < dk; ++x)
        Axpy(q[(t0 + i) * dk + x] * s->read[i * dk + x], &s->state[x * dv], o, dv);
    }
    AdvanceState(d, t0, n, k, v, *s, s->state.data());
  }
  std::memcpy(final_state, s->state.data(), sizeof(float) * dk * dv);
}

namespace {

// dq, dk, dv of one chunk (rows t0..t0+n) from dA, the chunk's starting
// state sc and the gradient of the state after it (s->dstate).
void ChunkInputGradients(const GatedLinearScanDesc& d, int64_t t0, int64_t n, const float* q,
                         const float* k, const float* v, const float* dout, const float* sc,
                         Scratch* s, float* dq, float* dk, float* dv) {
  const int64_t kd = d.key_dim, vd = d.value_dim;
  for (int64_t i = 0; i < n; ++i) {
    float* dqi = dq + (t0 + i) * kd;  // (dk)
    for (int64_t x = 0; x < kd; ++x)
      dqi[x] = s->read[i * kd + x] * Dot(sc + x * vd, dout + (t0 + i) * vd, vd);
    for (int64_t j = 0; j <= i; ++j) {
      const float a = s->dscores[i * n + j];
      const float* kj = k + (t0 + j) * kd;
      const float* e = &s->decay[(i * n + j) * kd];
      for (int64_t x = 0; x < kd; ++x) dqi[x] += a * kj[x] * e[x];
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    float* dkj = dk + (t0 + j) * kd;  // (dk)
    float* dvj = dv + (t0 + j) * vd;  // (dv)
    std::fill(dvj, dvj + vd, 0.0f);
    for (int64_t x = 0; x < kd; ++x) {
      const float w = s->write[j * kd + x];
      dkj[x] = w * Dot(&s->dstate[x * vd], v + (t0 + j) * vd, vd);
      Axpy(k[(t0 + j) * kd + x] * w, &s->dstate[x * vd], dvj, vd);
    }
    for (int64_t i = j; i < n; ++i) {
      const float a = s->dscores[i * n + j];
      const float* qi = q + (t0 + i) * kd;
      const float* e = &s->decay[(i * n + j) * kd];
      for (int64_t x = 0; x < kd; ++x) dkj[x] += a * qi[x] * e[x];
      Axpy(s->scores[i * n + j], dout + (t0 + i) * vd, dvj, vd);
    }
  }
}

// The log-gates' gradient of one chunk from dq, dk (already written), the
// state after the chunk (after) and its gradient (s->dstate).
void ChunkGateGradients(const GatedLinearScanDesc& d, int64_t t0, int64_t n, const float* q,
                        const float* k, const float* dq, const float* dk, const float* after,
                        Scratch* s, float* dlog_gate) {
  const int64_t kd = d.key_dim, vd = d.value_dim, gd = d.gate_dim;
  s->dcum.resize(n * kd);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t x = 0; x < kd; ++x) {
      const int64_t at = (t0 + i) * kd + x;
      s->dcum[i * kd + x] = q[at] * dq[at] - k[at] * dk[at];
    }
  for (int64_t x = 0; x < kd; ++x)
    s->dcum[(n - 1) * kd + x] += Dot(after + x * vd, &s->dstate[x * vd], vd);
  std::vector<float>& run = s->cum;  // reused: (gd) running sums from the chunk's end
  run.assign(gd, 0.0f);
  for (int64_t l = n - 1; l >= 0; --l) {
    const float* gl = &s->dcum[l * kd];
    if (gd == 1) {
      float total = 0.0f;
      for (int64_t x = 0; x < kd; ++x) total += gl[x];
      run[0] += total;
    } else {
      for (int64_t x = 0; x < kd; ++x) run[x] += gl[x];
    }
    std::memcpy(dlog_gate + (t0 + l) * gd, run.data(), sizeof(float) * gd);
  }
}

// dS <- exp(G_last) dS' + sum_i (q_i * read_i)^T dout_i: the gradient of
// the chunk's starting state.
void RetreatStateGradient(const GatedLinearScanDesc& d, int64_t t0, int64_t n, const float* q,
                          const float* dout, Scratch* s) {
  const int64_t kd = d.key_dim, vd = d.value_dim;
  const float* last = &s->read[(n - 1) * kd];
  for (int64_t x = 0; x < kd; ++x) {
    float* row = &s->dstate[x * vd];
    for (int64_t e = 0; e < vd; ++e) row[e] *= last[x];
    for (int64_t i = 0; i < n; ++i)
      Axpy(q[(t0 + i) * kd + x] * s->read[i * kd + x], dout + (t0 + i) * vd, row, vd);
  }
}

}  // namespace

void BackwardPair(const GatedLinearScanDesc& d, const float* q, const float* k, const float* v,
                  const float* log_gate, const float* state, const float* dout,
                  const float* dfinal_state, float* dq, float* dk, float* dv, float* dlog_gate,
                  float* dstate, Scratch* s) {
  const int64_t kd = d.key_dim, vd = d.value_dim, size = kd * vd, chunks = d.chunks();
  StartState(d, state, s);
  s->states.resize((chunks + 1) * size);  // each chunk's start, then the final state
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t t0 = c * d.chunk, n = std::min(d.chunk, d.tokens - t0);
    std::memcpy(&s->states[c * size], s->state.data(), sizeof(float) * size);
    PrepareGates(d, t0, n, log_gate, s);
    AdvanceState(d, t0, n, k, v, *s, s->state.data());
  }
  std::memcpy(&s->states[chunks * size], s->state.data(), sizeof(float) * size);
  if (dfinal_state != nullptr) {
    s->dstate.assign(dfinal_state, dfinal_state + size);
  } else {
    s->dstate.assign(size, 0.0f);
  }
  for (int64_t c = chunks - 1; c >= 0; --c) {
    const int64_t t0 = c * d.chunk, n = std::min(d.chunk, d.tokens - t0);
    PrepareGates(d, t0, n, log_gate, s);
    PrepareScores(d, t0, n, q, k, s);
    s->dscores.assign(n * n, 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j)
        s->dscores[i * n + j] = Dot(dout + (t0 + i) * vd, v + (t0 + j) * vd, vd);
    ChunkInputGradients(d, t0, n, q, k, v, dout, &s->states[c * size], s, dq, dk, dv);
    if (dlog_gate != nullptr)
      ChunkGateGradients(d, t0, n, q, k, dq, dk, &s->states[(c + 1) * size], s, dlog_gate);
    RetreatStateGradient(d, t0, n, q, dout, s);
  }
  if (dstate != nullptr) std::memcpy(dstate, s->dstate.data(), sizeof(float) * size);
}

}  // namespace gated_linear_scan
}  // namespace tvlab
