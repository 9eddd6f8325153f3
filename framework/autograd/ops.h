#ifndef TVLAB_FRAMEWORK_AUTOGRAD_OPS_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_OPS_H_

// Differentiable ops. Each runs its forward on CurrentBackend() and records
// a backward closure written next to it: ops_elementwise.cc, ops_matmul.cc,
// ops_shape.cc, and the fused ops in ops.cc. Shapes follow the legend
// in framework/tensor/tensor.h. Shape mismatches here are programming errors
// (CHECK): user input is validated before any op runs.

#include <cstdint>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/backend/fused_attention.h"
#include "framework/core/rng.h"

namespace tvlab {

// Elementwise with NumPy broadcasting.
Var Add(const Var& a, const Var& b);
Var Sub(const Var& a, const Var& b);
Var Mul(const Var& a, const Var& b);
Var Div(const Var& a, const Var& b);
Var Scale(const Var& x, float s);      // x * s
Var AddScalar(const Var& x, float s);  // x + s

Var Relu(const Var& x);
Var Gelu(const Var& x, bool tanh_approximation);
Var Silu(const Var& x);
Var Sigmoid(const Var& x);
Var Tanh(const Var& x);
Var Exp(const Var& x);
Var Log(const Var& x);
Var Sqrt(const Var& x);
Var Square(const Var& x);

// (..., m, k) @ (..., k, n) -> (..., m, n); transposes apply to the last two
// dims. b may also be 2-D and is then shared by every batch.
Var MatMul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);

// x (..., in) @ w^T + b: w is (out, in) as in torch.nn.Linear; b (out) or
// undefined.
Var Linear(const Var& x, const Var& w, const Var& b);

// Softmax over the last dimension; rows that are all -inf give zeros.
Var Softmax(const Var& x);

// Attention in one kernel, without a (T, S) buffer (backend/fused_attention.h
// has the math): q (B, H, T, hs), k (B, G, S, hs), v (B, G, S, hs_v) ->
// (B, H, T, hs_v). The backward recomputes the weights from the saved
// per-row log-sum-exp. REQUIRES: the backend implements kFusedAttention and
// kFusedAttentionBackward; the desc's sizes match the inputs.
// sink_logits (H), when defined, is the desc's sink (its values replace
// desc.sink_logits) and gets its gradient from the saved lse, out and dout:
//   d sink_h = -sum_{b,i} exp(sink_h - lse[b,h,i]) * (dout[b,h,i] . out[b,h,i]).
// bucket_table (num_buckets, H), when defined, is the table of the desc's
// bucketed bias (its values replace desc.bucket_bias.table; the rule and
// offset are the desc's) and gets its gradient from the backward kernel.
Var FusedAttention(const Var& q, const Var& k, const Var& v, const FusedAttentionDesc& desc,
                   const Var& sink_logits = Var(), const Var& bucket_table = Var());

// Normalizes over the last dimension. subtract_mean = true is LayerNorm,
// false is RMSNorm. gamma (C) and beta (C) may be undefined.
Var Normalize(const Var& x, const Var& gamma, const Var& beta, float eps, bool subtract_mean);

Var Reshape(const Var& x, Shape shape);
// y.shape[i] = x.shape[perm[i]].
Var Permute(const Var& x, const std::vector<int>& perm);
// x[..., start:start+length, ...] along `dim`.
Var Slice(const Var& x, int dim, int64_t start, int64_t length);
// Concatenation along `dim`; all other dims equal.
Var Concat(const std::vector<Var>& parts, int dim);
// (B, G, S, hs) -> (B, G * r, S, hs): each key/value head repeated r times
// consecutively (grouped-query attention).
Var RepeatHeads(const Var& x, int64_t r);

// RoPE's turn (Backend::Rotary): x (..., T, D), D even, each pair of a row's
// coordinates turned by the angle whose cos and sin (T, D/2) the row's
// position has; pairs (i, i + D/2), or (2i, 2i + 1) when `interleaved`. The
// backward turns the gradient back. -> (..., T, D).
Var Rotary(const Var& x, const Tensor& cos, const Tensor& sin, bool interleaved);
// The same turn on token-major rows, x (B, T, H, D) as attention's
// projections write them: every head of token t turned by row t of cos and
// sin (T, D/2). Equal bit for bit to permuting to (B, H, T, D), Rotary and
// permuting back. -> (B, T, H, D).
Var RotaryTokenMajor(const Var& x, const Tensor& cos, const Tensor& sin, bool interleaved);

Var Sum(const Var& x);   // all elements -> scalar
Var Mean(const Var& x);  // all elements -> scalar

// Rows `rows` of x along dim 0 (beam search reordering caches): no gradient.
Tensor GatherRows(const Tensor& x, const std::vector<int64_t>& rows);

// table (V, C) gathered at ids (N of them) -> (N, C).
Var Embedding(const Var& table, const std::vector<int32_t>& ids);

// Mean cross-entropy of logits (N, V) against targets (N); targets equal to
// ignore_index are skipped. label_smoothing as torch.nn.CrossEntropyLoss.
Var CrossEntropy(const Var& logits, const std::vector<int32_t>& targets,
                 int32_t ignore_index = -100, float label_smoothing = 0.0f);

// Inverted dropout: zeroes each element with probability p and scales the
// rest by 1/(1-p). The mask is a pure function of `stream`.
Var Dropout(const Var& x, float p, const RngStream& stream);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_OPS_H_
