#ifndef TVLAB_FRAMEWORK_ATTENTION_DELTA_RULE_H_
#define TVLAB_FRAMEWORK_ATTENTION_DELTA_RULE_H_

// The (gated) delta rule: the token mixing of the deltanet and
// gated_deltanet mixers (docs/mixers.md). Per batch row and head, a state
// S (dk, dv) that starts at S_0 (zero unless given); q_t, k_t (dk), v_t (dv)
// are row vectors, beta_t in (0, 1) a scalar write strength, and alpha_t =
// exp(g_t) a scalar decay with log-gate g_t <= 0 (absent: alpha_t = 1,
// DeltaNet):
//
//   S_t = alpha_t (I - beta_t k_t^T k_t) S_{t-1} + beta_t k_t^T v_t
//       = alpha_t S_{t-1} + k_t^T u_t,  u_t = beta_t (v_t - k_t alpha_t S_{t-1})
//   o_t = q_t S_t
//
// This is the papers' S_t = S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,
// o_t = S_t q_t (S: dv x dk, column vectors; Yang et al. 2024 eq. 1, Yang,
// Kautz & Hatamizadeh 2025 eq. 10) transposed: here S = S_paper^T, so a
// row of queries reads it with one matmul like the gated linear kernel.
// With beta_t = 1 and |k_t| = 1, k_t S_t = v_t: the write replaces the
// value stored under k_t (the "delta").
//
// With G_t = g_1 + ... + g_t (inside a chunk), unrolled:
//   u_t = beta_t (v_t - exp(G_t) k_t S_0 - sum_{j<t} exp(G_t - G_j) (k_t . k_j) u_j)
//   o_t = exp(G_t) q_t S_0 + sum_{j<=t} exp(G_t - G_j) (q_t . k_j) u_j
// so the pseudo-values U solve a unit lower-triangular system; every exp
// has a non-positive argument (G_t - G_j, j <= t; masked ones are exp(-inf)).
//
// Three forms that must agree (delta_rule_test.cc, and the conformance
// suite's mixer cases):
//   parallel  - the oracle: U by row-wise substitution over the whole
//               sequence (no chunks, no state, no explicit inverse), then
//               O = (Q K^T .* Gamma) U;
//   chunked   - the training form (the WY / UT representation, Yang et al.
//               2024 §3): per chunk of n tokens
//                 A = tril(diag(beta) (K K^T .* Gamma), -1)
//                 T = (I + A)^{-1} diag(beta)        (forward substitution)
//                 W = T diag(exp(G)) K,  U = T V,  U' = U - W S_0
//                 O = (Q K^T .* Gamma) U' + diag(exp(G)) Q S_0
//                 S_n = exp(G_n) S_0 + (K .* exp(G_n - G))^T U'
//               (Gamma_ij = exp(G_i - G_j) for j <= i, else 0); S carried
//               across chunks by matmuls, the last chunk shorter when T is
//               not a multiple of n;
//   recurrent - one token at a time (decoding).
// All are compositions of autograd ops, so gradients and every backend
// come with them.
//
// Shapes: q, k (B, H, T, dk); v (B, H, T, dv); beta (B, H, T, 1);
// log_gate (B, H, T, 1) or undefined; state (B, H, dk, dv) or undefined.

#include <cstdint>

#include "framework/attention/gated_linear.h"
#include "framework/autograd/var.h"
#include "framework/interfaces/attention_layout.h"

namespace tvlab {

// -> (B, H, T, dv), from a zero state.
Var DeltaRuleParallel(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& log_gate);
// -> outputs (B, H, T, dv) and the state after the last token (B, H, dk, dv).
GatedLinearOut DeltaRuleChunked(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& log_gate,
                                const Var& state, int64_t chunk);
GatedLinearOut DeltaRuleRecurrent(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& log_gate,
                                  const Var& state);

// A mixer layout's one call, as MixGatedLinear (gated_linear.h): the
// chunked form for a whole sequence, or with in.cache the state "state"
// (B, H, dk, dv) carried across calls (one token: recurrent; a prefill:
// chunked from the stored state). Honours SetMixerFormForTesting.
Var MixDeltaRule(const AttentionInput& in, const Var& q, const Var& k, const Var& v, const Var& beta,
                 const Var& log_gate, int64_t chunk);

// x / sqrt(sum x^2 + 1e-6) over the last dimension (fla's l2norm): the
// delta rule's keys and queries, so that I - beta k^T k stays a
// contraction.
Var L2NormalizeLastDim(const Var& x);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_DELTA_RULE_H_
