#include "framework/autograd/ops.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/matmul_precision.h"

#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

Backend& B() { return CurrentBackend(); }

Shape BroadcastShape(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    TVLAB_CHECK(da == db || da == 1 || db == 1)
        << "cannot broadcast " << ShapeToString(a) << " with " << ShapeToString(b);
    out[i] = std::max(da, db);
  }
  return out;
}

Tensor BinaryValue(BinaryOp op, const Tensor& a, const Tensor& b) {
  Shape out_shape = BroadcastShape(a.shape(), b.shape());
  Tensor out = Tensor::Empty(out_shape);
  B().Binary(op, a.ptr(), a.shape(), b.ptr(), b.shape(), out.ptr(), out_shape);
  return out;
}

// Sums a gradient of the broadcast shape back to `shape`.
Tensor ReduceTo(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  Tensor out = Tensor::Zeros(shape);
  B().ReduceSumTo(grad.ptr(), grad.shape(), out.ptr(), shape);
  return out;
}

Var UnaryOpVar(UnaryOp op, const Var& x) {
  Tensor y = Tensor::Empty(x.shape());
  B().Unary(op, x.value().ptr(), y.ptr(), y.numel());
  auto xn = x.node();
  Tensor y_saved = y;
  return MakeResult(y, {x}, [xn, y_saved, op](const Tensor& g) {
    Tensor dx = Tensor::Empty(g.shape());
    B().UnaryBackward(op, xn->value.ptr(), y_saved.ptr(), g.ptr(), dx.ptr(), g.numel());
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

}  // namespace

Var Add(const Var& a, const Var& b) {
  auto an = a.node(), bn = b.node();
  return MakeResult(BinaryValue(BinaryOp::kAdd, a.value(), b.value()), {a, b},
                    [an, bn](const Tensor& g) {
                      if (an->requires_grad) AccumulateGrad(*an, ReduceTo(g, an->value.shape()));
                      if (bn->requires_grad) AccumulateGrad(*bn, ReduceTo(g, bn->value.shape()));
                    });
}

Var Sub(const Var& a, const Var& b) {
  auto an = a.node(), bn = b.node();
  return MakeResult(BinaryValue(BinaryOp::kSub, a.value(), b.value()), {a, b},
                    [an, bn](const Tensor& g) {
                      if (an->requires_grad) AccumulateGrad(*an, ReduceTo(g, an->value.shape()));
                      if (bn->requires_grad) {
                        Tensor neg = Tensor::Zeros(g.shape());
                        Tensor minus_one = Tensor::Scalar(-1.0f);
                        B().Binary(BinaryOp::kMul, g.ptr(), g.shape(), minus_one.ptr(), {},
                                   neg.ptr(), g.shape());
                        AccumulateGrad(*bn, ReduceTo(neg, bn->value.shape()));
                      }
                    });
}

Var Mul(const Var& a, const Var& b) {
  auto an = a.node(), bn = b.node();
  return MakeResult(BinaryValue(BinaryOp::kMul, a.value(), b.value()), {a, b},
                    [an, bn](const Tensor& g) {
                      // d(a*b) = g*b da + g*a db
                      if (an->requires_grad)
                        AccumulateGrad(*an, ReduceTo(BinaryValue(BinaryOp::kMul, g, bn->value),
                                                     an->value.shape()));
                      if (bn->requires_grad)
                        AccumulateGrad(*bn, ReduceTo(BinaryValue(BinaryOp::kMul, g, an->value),
                                                     bn->value.shape()));
                    });
}

Var Div(const Var& a, const Var& b) {
  auto an = a.node(), bn = b.node();
  Tensor out = BinaryValue(BinaryOp::kDiv, a.value(), b.value());
  return MakeResult(out, {a, b}, [an, bn, out](const Tensor& g) {
    // d(a/b) = g/b da - g*(a/b)/b db
    Tensor g_over_b = BinaryValue(BinaryOp::kDiv, g, bn->value);
    if (an->requires_grad) AccumulateGrad(*an, ReduceTo(g_over_b, an->value.shape()));
    if (bn->requires_grad) {
      Tensor t = BinaryValue(BinaryOp::kMul, g_over_b, out);
      Tensor neg = BinaryValue(BinaryOp::kMul, t, Tensor::Scalar(-1.0f));
      AccumulateGrad(*bn, ReduceTo(neg, bn->value.shape()));
    }
  });
}

Var Scale(const Var& x, float s) {
  auto xn = x.node();
  return MakeResult(BinaryValue(BinaryOp::kMul, x.value(), Tensor::Scalar(s)), {x},
                    [xn, s](const Tensor& g) {
                      AccumulateOwnedGrad(*xn, BinaryValue(BinaryOp::kMul, g, Tensor::Scalar(s)));
                    });
}

Var AddScalar(const Var& x, float s) {
  auto xn = x.node();
  return MakeResult(BinaryValue(BinaryOp::kAdd, x.value(), Tensor::Scalar(s)), {x},
                    [xn](const Tensor& g) { AccumulateGrad(*xn, g); });
}

Var Relu(const Var& x) { return UnaryOpVar(UnaryOp::kRelu, x); }
Var Gelu(const Var& x, bool tanh_approximation) {
  return UnaryOpVar(tanh_approximation ? UnaryOp::kGeluTanh : UnaryOp::kGeluErf, x);
}
Var Silu(const Var& x) { return UnaryOpVar(UnaryOp::kSilu, x); }
Var Sigmoid(const Var& x) { return UnaryOpVar(UnaryOp::kSigmoid, x); }
Var Tanh(const Var& x) { return UnaryOpVar(UnaryOp::kTanh, x); }
Var Exp(const Var& x) { return UnaryOpVar(UnaryOp::kExp, x); }
Var Log(const Var& x) { return UnaryOpVar(UnaryOp::kLog, x); }
Var Sqrt(const Var& x) { return UnaryOpVar(UnaryOp::kSqrt, x); }
Var Square(const Var& x) { return UnaryOpVar(UnaryOp::kSquare, x); }

namespace {

// op(a) op(b), plus `bias` (n) on every output row when given (Linear's bias
// as the GEMM's epilogue: Backend::GemmBias).
Var MatMulPlusBias(const Var& a, const Var& b, bool trans_a, bool trans_b, const Var* bias) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  TVLAB_CHECK(sa.size() >= 2 && sb.size() >= 2);
  const bool shared_b = sb.size() == 2 && sa.size() > 2;
  TVLAB_CHECK(shared_b || sa.size() == sb.size()) << ShapeToString(sa) << " @ " << ShapeToString(sb);
  Shape batch_shape(sa.begin(), sa.end() - 2);
  if (!shared_b) {
    TVLAB_CHECK(std::equal(batch_shape.begin(), batch_shape.end(), sb.begin()))
        << "batch dims " << ShapeToString(sa) << " @ " << ShapeToString(sb);
  }
  const int64_t batch = NumElements(batch_shape);
  const int64_t m = trans_a ? sa[sa.size() - 1] : sa[sa.size() - 2];
  const int64_t k = trans_a ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const int64_t kb = trans_b ? sb[sb.size() - 1] : sb[sb.size() - 2];
  const int64_t n = trans_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
  TVLAB_CHECK_EQ(k, kb) << ShapeToString(sa) << " @ " << ShapeToString(sb);
  Shape out_shape = batch_shape;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = Tensor::Empty(out_shape);
  GemmDesc d;
  d.batch = batch, d.m = m, d.n = n, d.k = k, d.trans_a = trans_a, d.trans_b = trans_b;
  d.stride_a = m * k, d.stride_b = shared_b ? 0 : k * n, d.stride_c = m * n;
  d.precision = CurrentMatMulPrecision();  // runtime.precision
  if (bias != nullptr) {
    TVLAB_CHECK(bias->shape() == Shape({n})) << "bias " << ShapeToString(bias->shape()) << " for " << n << " columns";
    B().GemmBias(d, a.value().ptr(), b.value().ptr(), bias->value().ptr(), out.ptr());
  } else {
    B().Gemm(d, a.value().ptr(), b.value().ptr(), out.ptr());
  }
  auto an = a.node(), bn = b.node();
  auto biasn = bias != nullptr ? bias->node() : nullptr;
  std::vector<Var> inputs = {a, b};
  if (bias != nullptr) inputs.push_back(*bias);
  return MakeResult(out, inputs, [an, bn, biasn, d, shared_b](const Tensor& g) {
    // d bias (n) = G summed over every row.
    if (biasn != nullptr && biasn->requires_grad) AccumulateGrad(*biasn, ReduceTo(g, biasn->value.shape()));
    // C = op(A) op(B):  dop(A) = G op(B)^T,  dop(B) = op(A)^T G.
    if (an->requires_grad) {
      Tensor da = Tensor::Empty(an->value.shape());
      GemmDesc e;
      e.batch = d.batch, e.k = d.n, e.stride_c = d.m * d.k, e.precision = d.precision;
      if (!d.trans_a) {  // dA (m,k) = G (m,n) @ op(B)^T (n,k)
        e.m = d.m, e.n = d.k, e.trans_a = false, e.trans_b = !d.trans_b;
        e.stride_a = d.m * d.n, e.stride_b = d.stride_b;
        B().Gemm(e, g.ptr(), bn->value.ptr(), da.ptr());
      } else {  // dA (k,m) = op(B) (k,n) @ G^T (n,m)
        e.m = d.k, e.n = d.m, e.trans_a = d.trans_b, e.trans_b = true;
        e.stride_a = d.stride_b, e.stride_b = d.m * d.n;
        B().Gemm(e, bn->value.ptr(), g.ptr(), da.ptr());
      }
      AccumulateOwnedGrad(*an, std::move(da));
    }
    if (bn->requires_grad) {
      // With a shared B, sum over the batch: one gemm over (batch*m) rows.
      const int64_t batch = shared_b ? 1 : d.batch;
      const int64_t rows = shared_b ? d.batch * d.m : d.m;
      TVLAB_CHECK(!(shared_b && d.trans_a)) << "shared B with transposed A";
      Tensor db = Tensor::Empty(bn->value.shape());
      GemmDesc e;
      e.batch = batch, e.k = rows, e.stride_c = d.k * d.n, e.precision = d.precision;
      if (!d.trans_b) {  // dB (k,n) = op(A)^T (k,m) @ G (m,n)
        e.m = d.k, e.n = d.n, e.trans_a = !d.trans_a, e.trans_b = false;
        e.stride_a = d.m * d.k, e.stride_b = d.m * d.n;
        B().Gemm(e, an->value.ptr(), g.ptr(), db.ptr());
      } else {  // dB (n,k) = G^T (n,m) @ op(A) (m,k)
        e.m = d.n, e.n = d.k, e.trans_a = true, e.trans_b = d.trans_a;
        e.stride_a = d.m * d.n, e.stride_b = d.m * d.k;
        B().Gemm(e, g.ptr(), an->value.ptr(), db.ptr());
      }
      AccumulateOwnedGrad(*bn, std::move(db));
    }
  });
}

}  // namespace

Var MatMul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
  return MatMulPlusBias(a, b, trans_a, trans_b, /*bias=*/nullptr);
}

Var Linear(const Var& x, const Var& w, const Var& b) {
  // (..., in) x (out, in)^T + b (out) -> (..., out), the bias in the GEMM
  if (!b.defined()) return MatMul(x, w, false, true);
  if (b.shape() != Shape({w.dim(0)})) return Add(MatMul(x, w, false, true), b);  // any broadcastable bias
  return MatMulPlusBias(x, w, false, true, &b);
}

Var Softmax(const Var& x) {
  Tensor y = Tensor::Empty(x.shape());
  const int64_t cols = x.dim(-1), rows = x.value().numel() / cols;
  B().Softmax(x.value().ptr(), y.ptr(), rows, cols);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, y, rows, cols](const Tensor& g) {
    Tensor dx = Tensor::Empty(g.shape());
    B().SoftmaxBackward(y.ptr(), g.ptr(), dx.ptr(), rows, cols);
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

Var FusedAttention(const Var& q, const Var& k, const Var& v, const FusedAttentionDesc& desc) {
  const FusedAttentionDesc d = desc;
  TVLAB_CHECK(q.shape() == Shape({d.batch, d.heads, d.queries, d.head_dim})) << ShapeToString(q.shape());
  TVLAB_CHECK(k.shape() == Shape({d.batch, d.kv_heads, d.keys, d.head_dim})) << ShapeToString(k.shape());
  TVLAB_CHECK(v.shape() == Shape({d.batch, d.kv_heads, d.keys, d.value_dim})) << ShapeToString(v.shape());
  Tensor out = Tensor::Empty({d.batch, d.heads, d.queries, d.value_dim});
  Tensor lse = Tensor::Empty({d.batch, d.heads, d.queries});
  B().FusedAttention(d, q.value().ptr(), k.value().ptr(), v.value().ptr(), out.ptr(), lse.ptr());
  auto qn = q.node(), kn = k.node(), vn = v.node();
  return MakeResult(out, {q, k, v}, [qn, kn, vn, d, out, lse](const Tensor& dout) {
    Tensor dq = Tensor::Empty(qn->value.shape());
    Tensor dk = Tensor::Empty(kn->value.shape());
    Tensor dv = Tensor::Empty(vn->value.shape());
    B().FusedAttentionBackward(d, qn->value.ptr(), kn->value.ptr(), vn->value.ptr(), out.ptr(),
                               lse.ptr(), dout.ptr(), dq.ptr(), dk.ptr(), dv.ptr());
    if (qn->requires_grad) AccumulateOwnedGrad(*qn, std::move(dq));
    if (kn->requires_grad) AccumulateOwnedGrad(*kn, std::move(dk));
    if (vn->requires_grad) AccumulateOwnedGrad(*vn, std::move(dv));
  });
}

Var Normalize(const Var& x, const Var& gamma, const Var& beta, float eps, bool subtract_mean) {
  const int64_t cols = x.dim(-1), rows = x.value().numel() / cols;
  Tensor y = Tensor::Empty(x.shape());
  Tensor mean = Tensor::Empty({rows}), rstd = Tensor::Empty({rows});
  const float* g = gamma.defined() ? gamma.value().ptr() : nullptr;
  const float* bt = beta.defined() ? beta.value().ptr() : nullptr;
  B().Normalize(x.value().ptr(), g, bt, y.ptr(), mean.ptr(), rstd.ptr(), rows, cols, eps,
                subtract_mean);
  std::vector<Var> inputs = {x};
  if (gamma.defined()) inputs.push_back(gamma);
  if (beta.defined()) inputs.push_back(beta);
  auto xn = x.node();
  auto gn = gamma.defined() ? gamma.node() : nullptr;
  auto bn = beta.defined() ? beta.node() : nullptr;
  return MakeResult(y, inputs, [=](const Tensor& dy) {
    Tensor dx = Tensor::Empty(dy.shape());
    Tensor dgamma = Tensor::Zeros({cols}), dbeta = Tensor::Zeros({cols});
    B().NormalizeBackward(xn->value.ptr(), gn ? gn->value.ptr() : nullptr, mean.ptr(),
                          rstd.ptr(), dy.ptr(), dx.ptr(), dgamma.ptr(), dbeta.ptr(), rows,
                          cols, subtract_mean);
    AccumulateOwnedGrad(*xn, std::move(dx));
    if (gn) AccumulateOwnedGrad(*gn, std::move(dgamma));
    if (bn) AccumulateOwnedGrad(*bn, std::move(dbeta));
  });
}

Var Reshape(const Var& x, Shape shape) {
  auto xn = x.node();
  return MakeResult(x.value().Reshape(std::move(shape)), {x},
                    [xn](const Tensor& g) { AccumulateGrad(*xn, g.Reshape(xn->value.shape())); });
}

Var Permute(const Var& x, const std::vector<int>& perm) {
  const Shape& s = x.shape();
  TVLAB_CHECK_EQ(perm.size(), s.size());
  Shape out_shape(s.size());
  for (size_t i = 0; i < s.size(); ++i) out_shape[i] = s[perm[i]];
  Tensor y = Tensor::Empty(out_shape);
  B().Permute(x.value().ptr(), s, perm, y.ptr());
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int>(i);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, inverse](const Tensor& g) {
    Tensor dx = Tensor::Empty(xn->value.shape());
    B().Permute(g.ptr(), g.shape(), inverse, dx.ptr());
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

namespace {
// Views x as (outer, dim_size, inner) around `dim`.
void SplitAround(const Shape& s, int dim, int64_t* outer, int64_t* inner) {
  *outer = 1, *inner = 1;
  for (int i = 0; i < dim; ++i) *outer *= s[i];
  for (size_t i = dim + 1; i < s.size(); ++i) *inner *= s[i];
}
}  // namespace

Var Slice(const Var& x, int dim, int64_t start, int64_t length) {
  if (dim < 0) dim += static_cast<int>(x.rank());
  const Shape& s = x.shape();
  TVLAB_CHECK(start >= 0 && length >= 0 && start + length <= s[dim])
      << "slice [" << start << ", " << start + length << ") of dim " << dim << " in "
      << ShapeToString(s);
  int64_t outer, inner;
  SplitAround(s, dim, &outer, &inner);
  Shape out_shape = s;
  out_shape[dim] = length;
  Tensor y = Tensor::Empty(out_shape);  // (outer, length, inner) of x's (outer, full, inner)
  const int64_t full = s[dim];
  B().Copy2D(x.value().ptr() + start * inner, full * inner, y.ptr(), length * inner, outer,
             length * inner);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, outer, inner, full, start, length](const Tensor& g) {
    Tensor dx = Tensor::Zeros(xn->value.shape());
    B().Copy2D(g.ptr(), length * inner, dx.ptr() + start * inner, full * inner, outer,
               length * inner);
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

Var Concat(const std::vector<Var>& parts, int dim) {
  TVLAB_CHECK(!parts.empty());
  if (dim < 0) dim += static_cast<int>(parts[0].rank());
  Shape out_shape = parts[0].shape();
  out_shape[dim] = 0;
  std::vector<int64_t> sizes;
  for (const Var& p : parts) {
    sizes.push_back(p.shape()[dim]);
    out_shape[dim] += p.shape()[dim];
  }
  int64_t outer, inner;
  SplitAround(out_shape, dim, &outer, &inner);
  Tensor y = Tensor::Empty(out_shape);  // every element is written by one part
  const int64_t full = out_shape[dim];
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    B().Copy2D(parts[i].value().ptr(), sizes[i] * inner, y.ptr() + offset * inner, full * inner,
               outer, sizes[i] * inner);
    offset += sizes[i];
  }
  std::vector<std::shared_ptr<Node>> nodes;
  for (const Var& p : parts) nodes.push_back(p.node());
  return MakeResult(y, parts, [nodes, sizes, outer, inner, full](const Tensor& g) {
    int64_t offset = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->requires_grad) {
        Tensor dx = Tensor::Empty(nodes[i]->value.shape());
        B().Copy2D(g.ptr() + offset * inner, full * inner, dx.ptr(), sizes[i] * inner, outer,
                   sizes[i] * inner);
        AccumulateOwnedGrad(*nodes[i], std::move(dx));
      }
      offset += sizes[i];
    }
  });
}

Var RepeatHeads(const Var& x, int64_t r) {
  if (r == 1) return x;
  const Shape& s = x.shape();  // (B, G, S, hs)
  TVLAB_CHECK_EQ(s.size(), 4u);
  // Broadcast (B, G, 1, S*hs) against (r, 1) zeros -> (B, G, r, S*hs): the
  // backward (ReduceSumTo through Add) sums the r copies.
  Var zeros(Tensor::Zeros({r, 1}));
  Var repeated = Add(Reshape(x, {s[0], s[1], 1, s[2] * s[3]}), zeros);
  return Reshape(repeated, {s[0], s[1] * r, s[2], s[3]});  // (B, G*r, S, hs)
}

Var Sum(const Var& x) {
  Tensor out = Tensor::Empty({});
  B().ReduceSumTo(x.value().ptr(), x.shape(), out.ptr(), {});
  auto xn = x.node();
  return MakeResult(out, {x}, [xn](const Tensor& g) {
    // g broadcast to x's shape: 0 + g in every element.
    Tensor dx = Tensor::Zeros(xn->value.shape());
    B().Binary(BinaryOp::kAdd, dx.ptr(), dx.shape(), g.ptr(), g.shape(), dx.ptr(), dx.shape());
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

Var Mean(const Var& x) { return Scale(Sum(x), 1.0f / static_cast<float>(x.value().numel())); }

Tensor GatherRows(const Tensor& x, const std::vector<int64_t>& rows) {
  const int64_t n_rows = x.dim(0), row = x.numel() / std::max<int64_t>(n_rows, 1);
  std::vector<int32_t> ids;
  for (int64_t r : rows) {
    TVLAB_CHECK(r >= 0 && r < n_rows) << "row " << r << " of " << ShapeToString(x.shape());
    ids.push_back(static_cast<int32_t>(r));
  }
  Shape shape = x.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::Empty(shape);  // (rows, ...)
  B().Gather(x.ptr(), row, DeviceInts::Upload(ids).ptr(), shape[0], out.ptr());
  return out;
}

Var Embedding(const Var& table, const std::vector<int32_t>& ids) {
  const int64_t vocab = table.dim(0), cols = table.dim(1), n = static_cast<int64_t>(ids.size());
  for (int32_t id : ids) TVLAB_CHECK(id >= 0 && id < vocab) << "token id " << id << " vocab " << vocab;
  DeviceInts device_ids = DeviceInts::Upload(ids);  // the batch's edge: host ids to the device
  Tensor out = Tensor::Empty({n, cols});
  B().Gather(table.value().ptr(), cols, device_ids.ptr(), n, out.ptr());
  auto tn = table.node();
  return MakeResult(out, {table}, [tn, device_ids, cols, n](const Tensor& g) {
    Tensor dt = Tensor::Zeros(tn->value.shape());
    B().ScatterAdd(g.ptr(), cols, device_ids.ptr(), n, dt.ptr());
    AccumulateOwnedGrad(*tn, std::move(dt));
  });
}

Var CrossEntropy(const Var& logits, const std::vector<int32_t>& targets, int32_t ignore_index,
                 float label_smoothing) {
  TVLAB_CHECK_EQ(logits.rank(), 2);
  const int64_t rows = logits.dim(0), cols = logits.dim(1);
  TVLAB_CHECK_EQ(rows, static_cast<int64_t>(targets.size()));
  for (int32_t t : targets) {
    if (t == ignore_index) continue;
    TVLAB_CHECK(t >= 0 && t < cols) << "target " << t << " with " << cols << " classes";
  }
  DeviceInts device_targets = DeviceInts::Upload(targets);
  Tensor loss_rows = Tensor::Empty({rows}), probs = Tensor::Empty({rows, cols});
  Tensor loss = Tensor::Empty({});
  B().CrossEntropy(logits.value().ptr(), device_targets.ptr(), rows, cols, ignore_index,
                   label_smoothing, loss_rows.ptr(), probs.ptr(), loss.ptr());
  auto ln = logits.node();
  return MakeResult(loss, {logits}, [=](const Tensor& g) {
    Tensor dl = Tensor::Empty({rows, cols});
    B().CrossEntropyBackward(probs.ptr(), device_targets.ptr(), rows, cols, ignore_index,
                             label_smoothing, g.ptr(), dl.ptr());
    AccumulateOwnedGrad(*ln, std::move(dl));
  });
}

Var Dropout(const Var& x, float p, const RngStream& stream) {
  if (p <= 0.0f) return x;
  Tensor mask = Tensor::Empty(x.shape());
  // A batch shard draws the global mask's elements [first, first + n):
  // DropoutMask uses 16 bits per element, so an even first element starts at
  // word first / 2; an odd one draws one element more and drops it.
  const int64_t n = mask.numel();
  const uint64_t first = stream.ShardFirstElement(n);
  if (first % 2 == 0) {
    B().DropoutMask(stream.SkipWords(first / 2), p, mask.ptr(), n);
  } else {
    Tensor wider = Tensor::Empty({n + 1});
    B().DropoutMask(stream.SkipWords(first / 2), p, wider.ptr(), n + 1);
    B().Copy2D(wider.ptr() + 1, n, mask.ptr(), n, 1, n);
  }
  Tensor y = BinaryValue(BinaryOp::kMul, x.value(), mask);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, mask](const Tensor& g) {
    AccumulateOwnedGrad(*xn, BinaryValue(BinaryOp::kMul, g, mask));
  });
}

}  // namespace tvlab
