#include "framework/attention/gated_linear.h"

#include <algorithm>
#include <vector>

#include "framework/attention/kv_cache.h"
#include "framework/attention/mask.h"
#include "framework/autograd/gated_linear_ops.h"
#include "framework/autograd/ops.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

MixerForm g_form = MixerForm::kChunked;
int64_t g_chunk = 0;
bool g_composed = false;

// Whether GatedLinearChunked runs the fused scan (gated_linear.h): for
// per-key gates, where the backend has it.
bool FusedScan(const Var& q, const Var& log_gate) {
  if (g_composed || !log_gate.defined() || log_gate.dim(3) != q.dim(3) || q.dim(3) == 1) return false;
  const BackendDescriptor& backend = CurrentBackendDescriptor();
  return backend.Implements(Kernel::kGatedLinearScan) &&
         backend.Implements(Kernel::kGatedLinearScanBackward);
}

// (1, 1, n, n): 0 where j <= i, -inf where j > i (the causal mask's bias).
Var CausalBias(int64_t n) { return Var(MaskBias(CausalMask(0), 1, n, n)); }

// x (B, H, n, d) -> its cumulative sum along n, (B, H, n, d): a matmul with
// the lower-triangular ones (n, n) = exp(causal bias).
Var CumSum(const Var& x, const Var& bias) {
  const int64_t n = x.dim(2);
  Var lower = Reshape(Exp(bias), {n, n});                          // (n, n)
  Var xt = Permute(x, {0, 1, 3, 2});                               // (B, H, d, n)
  return Permute(MatMul(xt, lower, false, true), {0, 1, 3, 2});    // (B, H, n, d)
}

// The decayed causal scores A_ij = q_i . (k_j * exp(G_i - G_j)) for j <= i,
// 0 for j > i: q, k (B, H, n, dk), G (B, H, n, d) cumulative log-gates (d =
// dk or 1) or undefined (no decay); bias (1, 1, n, n) -> (B, H, n, n).
Var DecayedScores(const Var& q, const Var& k, const Var& cum, const Var& bias) {
  const int64_t b = q.dim(0), h = q.dim(1), n = q.dim(2), dk = q.dim(3);
  if (!cum.defined()) return Mul(MatMul(q, k, false, true), Exp(bias));  // (B, H, n, n)
  if (cum.dim(3) == 1) {
    Var diff = Sub(cum, Reshape(cum, {b, h, 1, n}));                      // (B, H, n, n): G_i - G_j
    return Mul(MatMul(q, k, false, true), Exp(Add(diff, bias)));         // masked exp <= 1
  }
  // Per key dimension: (B, H, n, 1, dk) against (B, H, 1, n, dk).
  Var rows = Reshape(cum, {b, h, n, 1, dk}), cols = Reshape(cum, {b, h, 1, n, dk});
  Var decay = Exp(Add(Sub(rows, cols), Reshape(bias, {1, 1, n, n, 1})));  // (B, H, n, n, dk) <= 1
  Var terms = Mul(Mul(Reshape(q, {b, h, n, 1, dk}), Reshape(k, {b, h, 1, n, dk})), decay);
  Var ones(Tensor::Full({dk, 1}, 1.0f));                                 // sums over dk
  return Reshape(MatMul(terms, ones), {b, h, n, n});                     // (B, H, n, n)
}

// One chunk (n tokens) from state S (undefined = zero): its outputs
// (B, H, n, dv) and the state after it.
GatedLinearOut Chunk(const Var& q, const Var& k, const Var& v, const Var& g, const Var& state) {
  const int64_t b = q.dim(0), h = q.dim(1), n = q.dim(2);
  Var bias = CausalBias(n);
  Var cum = g.defined() ? CumSum(g, bias) : Var();                  // (B, H, n, d), <= 0
  Var out = MatMul(DecayedScores(q, k, cum, bias), v);              // (B, H, n, dv) inside the chunk
  Var last = cum.defined() ? Slice(cum, 2, n - 1, 1) : Var();       // (B, H, 1, d): G_n
  if (state.defined()) {
    Var read = cum.defined() ? Mul(q, Exp(cum)) : q;                 // (B, H, n, dk)
    out = Add(out, MatMul(read, state));                            // (B, H, n, dk) x (B, H, dk, dv)
  }
  Var keys = cum.defined() ? Mul(k, Exp(Sub(last, cum))) : k;       // (B, H, n, dk): G_n - G_j <= 0
  Var fresh = MatMul(keys, v, true, false);                         // (B, H, dk, dv)
  if (!state.defined()) return {out, fresh};
  Var kept = cum.defined() ? Mul(state, Exp(Reshape(last, {b, h, last.dim(3), 1}))) : state;
  return {out, Add(kept, fresh)};                                   // (B, H, dk, dv)
}

}  // namespace

Var GatedLinearParallel(const Var& q, const Var& k, const Var& v, const Var& log_gate) {
  Var bias = CausalBias(q.dim(2));                                      // (1, 1, T, T)
  Var cum = log_gate.defined() ? CumSum(log_gate, bias) : Var();       // (B, H, T, d)
  return MatMul(DecayedScores(q, k, cum, bias), v);                     // (B, H, T, dv)
}

GatedLinearOut GatedLinearChunked(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                                  const Var& state, int64_t chunk) {
  TVLAB_CHECK(chunk > 0) << "chunk " << chunk;
  if (!FusedScan(q, log_gate)) return GatedLinearChunkedComposed(q, k, v, log_gate, state, chunk);
  return GatedLinearChunkedFused(q, k, v, log_gate, state, chunk);
}

GatedLinearOut GatedLinearChunkedFused(const Var& q, const Var& k, const Var& v,
                                       const Var& log_gate, const Var& state, int64_t chunk) {
  TVLAB_CHECK(chunk > 0) << "chunk " << chunk;
  GatedLinearScanVars r = GatedLinearScan(q, k, v, log_gate, state, chunk);
  return {r.out, r.state};
}

GatedLinearOut GatedLinearChunkedComposed(const Var& q, const Var& k, const Var& v,
                                          const Var& log_gate, const Var& state, int64_t chunk) {
  TVLAB_CHECK(chunk > 0) << "chunk " << chunk;
  const int64_t t = q.dim(2);
  std::vector<Var> outs;
  Var s = state;
  for (int64_t start = 0; start < t; start += chunk) {
    const int64_t n = std::min(chunk, t - start);
    GatedLinearOut part = Chunk(Slice(q, 2, start, n), Slice(k, 2, start, n), Slice(v, 2, start, n),
                                log_gate.defined() ? Slice(log_gate, 2, start, n) : Var(), s);
    outs.push_back(part.out);  // (B, H, n, dv)
    s = part.state;            // (B, H, dk, dv)
  }
  return {outs.size() == 1 ? outs[0] : Concat(outs, 2), s};
}

GatedLinearOut GatedLinearRecurrent(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                                    const Var& state) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), dk = q.dim(3), dv = v.dim(3);
  Var s = state.defined() ? state : Var(Tensor::Zeros({b, h, dk, dv}));  // (B, H, dk, dv)
  std::vector<Var> outs;
  for (int64_t i = 0; i < t; ++i) {
    if (log_gate.defined()) {
      Var g = Slice(log_gate, 2, i, 1);                                   // (B, H, 1, d)
      s = Mul(s, Exp(Reshape(g, {b, h, g.dim(3), 1})));                   // decay rows of S
    }
    s = Add(s, MatMul(Slice(k, 2, i, 1), Slice(v, 2, i, 1), true, false));  // + k_t^T v_t
    outs.push_back(MatMul(Slice(q, 2, i, 1), s));                         // (B, H, 1, dv)
  }
  return {outs.size() == 1 ? outs[0] : Concat(outs, 2), s};
}

Var MixGatedLinear(const AttentionInput& in, const Var& q, const Var& k, const Var& v,
                   const Var& log_gate, int64_t chunk) {
  TVLAB_CHECK(!in.memory.defined()) << "a recurrent mixer is self-attention only";
  TVLAB_CHECK(in.mask.causal && in.mask.window == 0 && !in.mask.has_documents())
      << "a recurrent mixer needs a causal mask without window or documents";
  if (g_chunk > 0) chunk = g_chunk;
  if (in.cache == nullptr) {
    TVLAB_CHECK(in.position_offset == in.mask.causal_offset && in.position_offset == 0)
        << "a recurrent mixer without a cache starts at position 0";
    switch (g_form) {
      case MixerForm::kParallel: return GatedLinearParallel(q, k, v, log_gate);
      case MixerForm::kRecurrent: return GatedLinearRecurrent(q, k, v, log_gate, Var()).out;
      case MixerForm::kChunked: break;
    }
    return GatedLinearChunked(q, k, v, log_gate, Var(), chunk).out;
  }
  TVLAB_CHECK(g_form != MixerForm::kParallel) << "the parallel form has no state to cache";
  TVLAB_CHECK_EQ(in.position_offset, in.cache->length());
  const Tensor* stored = in.cache->State("state");
  Var start = stored != nullptr ? Var(*stored) : Var();  // (B, H, dk, dv), no gradient
  const int64_t t = q.dim(2);
  GatedLinearOut r = (t == 1 || g_form == MixerForm::kRecurrent)
                         ? GatedLinearRecurrent(q, k, v, log_gate, start)
                         : GatedLinearChunked(q, k, v, log_gate, start, chunk);
  in.cache->SetState("state", r.state.value(), t);
  return r.out;
}

void SetComposedChunkedForTesting(bool composed) { g_composed = composed; }

void SetMixerFormForTesting(MixerForm form, int64_t chunk) {
  g_form = form;
  g_chunk = chunk;
}

MixerForm MixerFormForTesting(int64_t* chunk) {
  *chunk = g_chunk;
  return g_form;
}

Var LogSigmoid(const Var& x) {
  Var negative_part = Scale(Relu(Scale(x, -1.0f)), -1.0f);               // min(x, 0)
  Var magnitude = Add(Relu(x), Relu(Scale(x, -1.0f)));                   // |x|
  return Sub(negative_part, Log(AddScalar(Exp(Scale(magnitude, -1.0f)), 1.0f)));
}

}  // namespace tvlab
