#ifndef TVLAB_FRAMEWORK_ATTENTION_GATED_LINEAR_H_
#define TVLAB_FRAMEWORK_ATTENTION_GATED_LINEAR_H_

// The gated linear kernel: the token mixing of the recurrent mixers
// (linear_attention, gla, retnet; docs/mixers.md). Per batch row and head,
// with a state S (dk, dv) that starts at S_0 (zero unless given):
//
//   S_t = diag(exp(g_t)) S_{t-1} + k_t^T v_t,     o_t = q_t S_t
//
// q_t, k_t (dk), v_t (dv), and log-gates g_t <= 0 that either have dk
// entries (GLA: one forget gate per key dimension), or 1 (RetNet: one
// decay per head, broadcast), or are absent (linear attention: no decay).
// Unrolled, o_t = sum_{j<=t} (q_t . (k_j * exp(G_t - G_j))) v_j
// + (q_t * exp(G_t)) S_0 with G_t = g_1 + ... + g_t, so G_t - G_j <= 0 for
// j <= t: every exp below has a non-positive argument (the masked j > t
// ones are exp(-inf) = 0), which keeps the gates stable in log space
// (Yang et al. 2024, §4: no exp of a large positive number).
//
// Three forms compute it and must agree (the attention conformance suite's
// mixer cases, attention_conformance_mixers.cc):
//   parallel  - the (T, T) form over the whole sequence (the oracle);
//   chunked   - the training form: chunks of C tokens, each quadratic inside
//               and carrying S across chunks by matmuls (T need not be a
//               multiple of C; the last chunk is shorter);
//   recurrent - one token at a time (decoding).
// The parallel and recurrent forms are compositions of autograd ops
// (matmuls, elementwise, reshapes, the mask kernel), so gradients and every
// backend come with them; a cumulative sum along T is a matmul with a
// lower-triangular matrix of ones. The chunked form has two
// implementations that must agree: the fused scan
// (Backend::GatedLinearScan, framework/autograd/gated_linear_ops.h: one
// kernel forward and one backward, nothing of size (C, C, dk) kept) and
// the same chunks composed of autograd ops (GatedLinearChunkedComposed: the
// fused scan's oracle). GatedLinearChunked runs the fused scan for per-key
// gates (GLA: the composition's (C, C, dk) decay made it about 4x slower)
// where the backend implements it, and the composition otherwise (per-head
// or no gates: its oneDNN GEMMs beat the scan's per-pair loops at small T:
// 60 steps of lm_text_retnet 10.4 s composed, 14.7 s fused; docs/mixers.md).
//
// Shapes: q, k (B, H, T, dk); v (B, H, T, dv); log_gate (B, H, T, dk),
// (B, H, T, 1) or undefined; state (B, H, dk, dv) or undefined (zero).

#include <cstdint>

#include "framework/autograd/var.h"
#include "framework/interfaces/attention_layout.h"

namespace tvlab {

enum class MixerForm { kChunked, kParallel, kRecurrent };

// -> (B, H, T, dv), from a zero state.
Var GatedLinearParallel(const Var& q, const Var& k, const Var& v, const Var& log_gate);

struct GatedLinearOut {
  Var out;    // (B, H, T, dv)
  Var state;  // (B, H, dk, dv) after the last token
};
GatedLinearOut GatedLinearChunked(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                                  const Var& state, int64_t chunk);
// The fused scan, always. REQUIRES: the backend implements it.
GatedLinearOut GatedLinearChunkedFused(const Var& q, const Var& k, const Var& v,
                                       const Var& log_gate, const Var& state, int64_t chunk);
// The chunked form composed of autograd ops, never the fused kernel.
GatedLinearOut GatedLinearChunkedComposed(const Var& q, const Var& k, const Var& v,
                                          const Var& log_gate, const Var& state, int64_t chunk);
// Tests and benchmarks: GatedLinearChunked runs the composition even for
// per-key gates on a backend with the fused scan. Not thread-safe; reset
// with false.
void SetComposedChunkedForTesting(bool composed);
GatedLinearOut GatedLinearRecurrent(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                                    const Var& state);

// A mixer layout's one call: the chunked form (chunk tokens a chunk) for a
// whole sequence, or, with in.cache (kv_cache.h), the state "state" carried
// across calls: a call of one token runs the recurrent form, a longer one
// (a prefill) the chunked form from the stored state. in must be causal
// self-attention without documents or a window (validation,
// framework/model/mixer_spec.cc, refuses the rest; checked here). Key
// padding needs nothing: padding sits at the end of a row, so causally no
// real token reads it.
Var MixGatedLinear(const AttentionInput& in, const Var& q, const Var& k, const Var& v,
                   const Var& log_gate, int64_t chunk);

// Tests: which form MixGatedLinear runs for a whole sequence, and the chunk
// size (0 = the layout's). The parallel form has no state, so with a cache
// it is a programming error. Not thread-safe; reset with (kChunked, 0).
void SetMixerFormForTesting(MixerForm form, int64_t chunk);
// The form and chunk (0 = the layout's) last set by SetMixerFormForTesting:
// the other mixer kernels (delta_rule.h) honour the same switch.
MixerForm MixerFormForTesting(int64_t* chunk);

// log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), stable for any x
// (the exp never sees a positive argument).
Var LogSigmoid(const Var& x);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_GATED_LINEAR_H_
