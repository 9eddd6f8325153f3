#include "framework/attention/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/attention/kv_cache.h"
#include "framework/attention/mask.h"
#include "framework/autograd/ops.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// (1, 1, n, n): 0 where j <= i, -inf where j > i (the causal mask's bias).
Var CausalBias(int64_t n) { return Var(MaskBias(CausalMask(0), 1, n, n)); }

// (1, 1, n, n): 1 where j < i, else 0.
Var StrictlyLower(int64_t n) {
  std::vector<float> m(static_cast<size_t>(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) m[static_cast<size_t>(i * n + j)] = 1.0f;
  return Var(Tensor::FromVector({1, 1, n, n}, m));
}

// x (B, H, n, 1) -> its cumulative sum along n, (B, H, n, 1): a matmul with
// the lower-triangular ones (n, n) = exp(causal bias).
Var CumSum(const Var& x, const Var& bias) {
  const int64_t n = x.dim(2);
  Var lower = Reshape(Exp(bias), {n, n});                          // (n, n)
  Var xt = Permute(x, {0, 1, 3, 2});                               // (B, H, 1, n)
  return Permute(MatMul(xt, lower, false, true), {0, 1, 3, 2});    // (B, H, n, 1)
}

// Gamma_ij = exp(G_i - G_j) for j <= i, 0 for j > i: (B, H, n, n) from the
// cumulative log-gates cum (B, H, n, 1), or (1, 1, n, n) lower ones without.
Var Decay(const Var& cum, const Var& bias) {
  if (!cum.defined()) return Exp(bias);
  const int64_t b = cum.dim(0), h = cum.dim(1), n = cum.dim(2);
  Var diff = Sub(cum, Reshape(cum, {b, h, 1, n}));  // (B, H, n, n): G_i - G_j
  return Exp(Add(diff, bias));                      // masked: exp(-inf) = 0, else <= 1
}

Var Cat(const std::vector<Var>& parts) { return parts.size() == 1 ? parts[0] : Concat(parts, 2); }

// (I + a)^{-1} for a (B, H, n, n) strictly lower triangular, by forward
// substitution: the residual r starts at I; once columns 0..j-1 are
// eliminated, row j of r is row j of the inverse, and column j of a is
// eliminated from the rows below with it.
Var UnitLowerInverse(const Var& a) {
  const int64_t b = a.dim(0), h = a.dim(1), n = a.dim(2);
  std::vector<float> eye(static_cast<size_t>(b * h * n * n), 0.0f);
  for (int64_t m = 0; m < b * h; ++m)
    for (int64_t i = 0; i < n; ++i) eye[static_cast<size_t>((m * n + i) * n + i)] = 1.0f;
  Var r(Tensor::FromVector({b, h, n, n}, eye));  // (B, H, n, n)
  for (int64_t j = 0; j + 1 < n; ++j) {
    Var row = Slice(r, 2, j, 1);          // (B, H, 1, n): final
    Var col = Slice(a, 3, j, 1);          // (B, H, n, 1): zero in rows <= j
    r = Sub(r, MatMul(col, row));         // (B, H, n, n)
  }
  return r;
}

// One chunk (n tokens) from state S (undefined = zero), the WY form.
GatedLinearOut Chunk(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& g,
                     const Var& state) {
  const int64_t b = q.dim(0), h = q.dim(1), n = q.dim(2);
  Var bias = CausalBias(n);
  Var cum = g.defined() ? CumSum(g, bias) : Var();  // (B, H, n, 1), <= 0
  Var decay = Decay(cum, bias);                     // (B, H, n, n) or (1, 1, n, n)
  Var a = Mul(Mul(MatMul(k, k, false, true), Mul(decay, StrictlyLower(n))), beta);  // (B, H, n, n)
  Var inv = UnitLowerInverse(a);                    // (B, H, n, n): (I + A)^{-1}
  Var u = MatMul(inv, Mul(v, beta));                // (B, H, n, dv): U = T V
  Var out_read;                                     // (B, H, n, dv): the stored state's share
  if (state.defined()) {
    Var kb = Mul(k, beta);                          // (B, H, n, dk)
    if (cum.defined()) kb = Mul(kb, Exp(cum));
    Var w = MatMul(inv, kb);                        // (B, H, n, dk): W = T diag(exp(G)) K
    u = Sub(u, MatMul(w, state));                   // (B, H, n, dv): U' = U - W S_0
    out_read = MatMul(cum.defined() ? Mul(q, Exp(cum)) : q, state);
  }
  Var out = MatMul(Mul(MatMul(q, k, false, true), decay), u);  // (B, H, n, dv)
  if (out_read.defined()) out = Add(out, out_read);
  Var last = cum.defined() ? Slice(cum, 2, n - 1, 1) : Var();  // (B, H, 1, 1): G_n
  Var keys = cum.defined() ? Mul(k, Exp(Sub(last, cum))) : k;  // (B, H, n, dk): G_n - G_j <= 0
  Var fresh = MatMul(keys, u, true, false);                     // (B, H, dk, dv)
  if (!state.defined()) return {out, fresh};
  Var kept = cum.defined() ? Mul(state, Exp(Reshape(last, {b, h, 1, 1}))) : state;
  return {out, Add(kept, fresh)};
}

}  // namespace

Var DeltaRuleParallel(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& log_gate) {
  const int64_t t = q.dim(2);
  Var bias = CausalBias(t);                                           // (1, 1, T, T)
  Var decay = Decay(log_gate.defined() ? CumSum(log_gate, bias) : Var(), bias);  // (B, H, T, T)
  Var kk = Mul(MatMul(k, k, false, true), decay);                     // (B, H, T, T)
  std::vector<Var> us;                                                // u_t (B, H, 1, dv)
  for (int64_t i = 0; i < t; ++i) {
    Var u = Slice(v, 2, i, 1);                                        // (B, H, 1, dv)
    if (i > 0) u = Sub(u, MatMul(Slice(Slice(kk, 2, i, 1), 3, 0, i), Cat(us)));  // (B,H,1,i)(B,H,i,dv)
    us.push_back(Mul(u, Slice(beta, 2, i, 1)));
  }
  return MatMul(Mul(MatMul(q, k, false, true), decay), Cat(us));      // (B, H, T, dv)
}

GatedLinearOut DeltaRuleChunked(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& log_gate,
                                const Var& state, int64_t chunk) {
  TVLAB_CHECK(chunk > 0) << "chunk " << chunk;
  const int64_t t = q.dim(2);
  std::vector<Var> outs;
  Var s = state;
  for (int64_t start = 0; start < t; start += chunk) {
    const int64_t n = std::min(chunk, t - start);
    GatedLinearOut part = Chunk(Slice(q, 2, start, n), Slice(k, 2, start, n), Slice(v, 2, start, n),
                                Slice(beta, 2, start, n),
                                log_gate.defined() ? Slice(log_gate, 2, start, n) : Var(), s);
    outs.push_back(part.out);  // (B, H, n, dv)
    s = part.state;            // (B, H, dk, dv)
  }
  return {Cat(outs), s};
}

GatedLinearOut DeltaRuleRecurrent(const Var& q, const Var& k, const Var& v, const Var& beta, const Var& log_gate,
                                  const Var& state) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), dk = q.dim(3), dv = v.dim(3);
  Var s = state.defined() ? state : Var(Tensor::Zeros({b, h, dk, dv}));  // (B, H, dk, dv)
  std::vector<Var> outs;
  for (int64_t i = 0; i < t; ++i) {
    if (log_gate.defined()) s = Mul(s, Exp(Reshape(Slice(log_gate, 2, i, 1), {b, h, 1, 1})));  // alpha_t S
    Var key = Slice(k, 2, i, 1);                                                 // (B, H, 1, dk)
    Var u = Mul(Sub(Slice(v, 2, i, 1), MatMul(key, s)), Slice(beta, 2, i, 1));  // (B, H, 1, dv)
    s = Add(s, MatMul(key, u, true, false));                                     // + k_t^T u_t
    outs.push_back(MatMul(Slice(q, 2, i, 1), s));                                // (B, H, 1, dv)
  }
  return {Cat(outs), s};
}

Var MixDeltaRule(const AttentionInput& in, const Var& q, const Var& k, const Var& v, const Var& beta,
                 const Var& log_gate, int64_t chunk) {
  TVLAB_CHECK(!in.memory.defined()) << "a recurrent mixer is self-attention only";
  TVLAB_CHECK(in.mask.causal && in.mask.window == 0 && !in.mask.has_documents())
      << "a recurrent mixer needs a causal mask without window or documents";
  int64_t forced_chunk = 0;
  const MixerForm form = MixerFormForTesting(&forced_chunk);
  if (forced_chunk > 0) chunk = forced_chunk;
  if (in.cache == nullptr) {
    TVLAB_CHECK(in.position_offset == in.mask.causal_offset && in.position_offset == 0)
        << "a recurrent mixer without a cache starts at position 0";
    switch (form) {
      case MixerForm::kParallel: return DeltaRuleParallel(q, k, v, beta, log_gate);
      case MixerForm::kRecurrent: return DeltaRuleRecurrent(q, k, v, beta, log_gate, Var()).out;
      case MixerForm::kChunked: break;
    }
    return DeltaRuleChunked(q, k, v, beta, log_gate, Var(), chunk).out;
  }
  TVLAB_CHECK(form != MixerForm::kParallel) << "the parallel form has no state to cache";
  TVLAB_CHECK_EQ(in.position_offset, in.cache->length());
  const Tensor* stored = in.cache->State("state");
  Var start = stored != nullptr ? Var(*stored) : Var();  // (B, H, dk, dv), no gradient
  const int64_t t = q.dim(2);
  GatedLinearOut r = (t == 1 || form == MixerForm::kRecurrent)
                         ? DeltaRuleRecurrent(q, k, v, beta, log_gate, start)
                         : DeltaRuleChunked(q, k, v, beta, log_gate, start, chunk);
  in.cache->SetState("state", r.state.value(), t);
  return r.out;
}

Var L2NormalizeLastDim(const Var& x) {
  const float d = static_cast<float>(x.dim(x.shape().size() - 1));
  // RMSNorm is x / sqrt(mean x^2 + eps) = sqrt(d) x / sqrt(sum x^2 + d eps).
  return Scale(Normalize(x, Var(), Var(), 1e-6f / d, /*subtract_mean=*/false), 1.0f / std::sqrt(d));
}

}  // namespace tvlab
