#include "framework/autograd/ops.h"

#include <algorithm>
#include <cmath>

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
  B().Binary(op, a.data(), a.shape(), b.data(), b.shape(), out.data(), out_shape);
  return out;
}

// Sums a gradient of the broadcast shape back to `shape`.
Tensor ReduceTo(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  Tensor out = Tensor::Zeros(shape);
  B().ReduceSumTo(grad.data(), grad.shape(), out.data(), shape);
  return out;
}

Var UnaryOpVar(UnaryOp op, const Var& x) {
  Tensor y = Tensor::Empty(x.shape());
  B().Unary(op, x.value().data(), y.data(), y.numel());
  auto xn = x.node();
  Tensor y_saved = y;
  return MakeResult(y, {x}, [xn, y_saved, op](const Tensor& g) {
    Tensor dx = Tensor::Empty(g.shape());
    B().UnaryBackward(op, xn->value.data(), y_saved.data(), g.data(), dx.data(), g.numel());
    AccumulateGrad(*xn, dx);
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
                        B().Binary(BinaryOp::kMul, g.data(), g.shape(), minus_one.data(), {},
                                   neg.data(), g.shape());
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
                      AccumulateGrad(*xn, BinaryValue(BinaryOp::kMul, g, Tensor::Scalar(s)));
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

Var MatMul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
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
  B().Gemm(d, a.value().data(), b.value().data(), out.data());
  auto an = a.node(), bn = b.node();
  return MakeResult(out, {a, b}, [an, bn, d, shared_b](const Tensor& g) {
    // C = op(A) op(B):  dop(A) = G op(B)^T,  dop(B) = op(A)^T G.
    if (an->requires_grad) {
      Tensor da = Tensor::Empty(an->value.shape());
      GemmDesc e;
      e.batch = d.batch, e.k = d.n, e.stride_c = d.m * d.k;
      if (!d.trans_a) {  // dA (m,k) = G (m,n) @ op(B)^T (n,k)
        e.m = d.m, e.n = d.k, e.trans_a = false, e.trans_b = !d.trans_b;
        e.stride_a = d.m * d.n, e.stride_b = d.stride_b;
        B().Gemm(e, g.data(), bn->value.data(), da.data());
      } else {  // dA (k,m) = op(B) (k,n) @ G^T (n,m)
        e.m = d.k, e.n = d.m, e.trans_a = d.trans_b, e.trans_b = true;
        e.stride_a = d.stride_b, e.stride_b = d.m * d.n;
        B().Gemm(e, bn->value.data(), g.data(), da.data());
      }
      AccumulateGrad(*an, da);
    }
    if (bn->requires_grad) {
      // With a shared B, sum over the batch: one gemm over (batch*m) rows.
      const int64_t batch = shared_b ? 1 : d.batch;
      const int64_t rows = shared_b ? d.batch * d.m : d.m;
      TVLAB_CHECK(!(shared_b && d.trans_a)) << "shared B with transposed A";
      Tensor db = Tensor::Empty(bn->value.shape());
      GemmDesc e;
      e.batch = batch, e.k = rows, e.stride_c = d.k * d.n;
      if (!d.trans_b) {  // dB (k,n) = op(A)^T (k,m) @ G (m,n)
        e.m = d.k, e.n = d.n, e.trans_a = !d.trans_a, e.trans_b = false;
        e.stride_a = d.m * d.k, e.stride_b = d.m * d.n;
        B().Gemm(e, an->value.data(), g.data(), db.data());
      } else {  // dB (n,k) = G^T (n,m) @ op(A) (m,k)
        e.m = d.n, e.n = d.k, e.trans_a = true, e.trans_b = d.trans_a;
        e.stride_a = d.m * d.n, e.stride_b = d.m * d.k;
        B().Gemm(e, g.data(), an->value.data(), db.data());
      }
      AccumulateGrad(*bn, db);
    }
  });
}

Var Linear(const Var& x, const Var& w, const Var& b) {
  // (..., in) x (out, in)^T -> (..., out)
  Var y = MatMul(x, w, false, true);
  return b.defined() ? Add(y, b) : y;
}

Var Softmax(const Var& x) {
  Tensor y = Tensor::Empty(x.shape());
  const int64_t cols = x.dim(-1), rows = x.value().numel() / cols;
  B().Softmax(x.value().data(), y.data(), rows, cols);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, y, rows, cols](const Tensor& g) {
    Tensor dx = Tensor::Empty(g.shape());
    B().SoftmaxBackward(y.data(), g.data(), dx.data(), rows, cols);
    AccumulateGrad(*xn, dx);
  });
}

Var Normalize(const Var& x, const Var& gamma, const Var& beta, float eps, bool subtract_mean) {
  const int64_t cols = x.dim(-1), rows = x.value().numel() / cols;
  Tensor y = Tensor::Empty(x.shape());
  Tensor mean = Tensor::Empty({rows}), rstd = Tensor::Empty({rows});
  const float* g = gamma.defined() ? gamma.value().data() : nullptr;
  const float* bt = beta.defined() ? beta.value().data() : nullptr;
  B().Normalize(x.value().data(), g, bt, y.data(), mean.data(), rstd.data(), rows, cols, eps,
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
    B().NormalizeBackward(xn->value.data(), gn ? gn->value.data() : nullptr, mean.data(),
                          rstd.data(), dy.data(), dx.data(), dgamma.data(), dbeta.data(), rows,
                          cols, subtract_mean);
    AccumulateGrad(*xn, dx);
    if (gn) AccumulateGrad(*gn, dgamma);
    if (bn) AccumulateGrad(*bn, dbeta);
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
  B().Permute(x.value().data(), s, perm, y.data());
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int>(i);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, inverse](const Tensor& g) {
    Tensor dx = Tensor::Empty(xn->value.shape());
    B().Permute(g.data(), g.shape(), inverse, dx.data());
    AccumulateGrad(*xn, dx);
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
  Tensor y = Tensor::Empty(out_shape);
  const float* src = x.value().data();
  for (int64_t o = 0; o < outer; ++o)
    std::copy(src + (o * s[dim] + start) * inner, src + (o * s[dim] + start + length) * inner,
              y.data() + o * length * inner);
  auto xn = x.node();
  const int64_t full = s[dim];
  return MakeResult(y, {x}, [xn, outer, inner, full, start, length](const Tensor& g) {
    Tensor dx = Tensor::Zeros(xn->value.shape());
    for (int64_t o = 0; o < outer; ++o)
      std::copy(g.data() + o * length * inner, g.data() + (o + 1) * length * inner,
                dx.data() + (o * full + start) * inner);
    AccumulateGrad(*xn, dx);
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
  Tensor y = Tensor::Zeros(out_shape);
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const float* src = parts[i].value().data();
    for (int64_t o = 0; o < outer; ++o)
      std::copy(src + o * sizes[i] * inner, src + (o + 1) * sizes[i] * inner,
                y.data() + (o * out_shape[dim] + offset) * inner);
    offset += sizes[i];
  }
  std::vector<std::shared_ptr<Node>> nodes;
  for (const Var& p : parts) nodes.push_back(p.node());
  const int64_t full = out_shape[dim];
  return MakeResult(y, parts, [nodes, sizes, outer, inner, full](const Tensor& g) {
    int64_t offset = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->requires_grad) {
        Tensor dx = Tensor::Zeros(nodes[i]->value.shape());
        for (int64_t o = 0; o < outer; ++o)
          std::copy(g.data() + (o * full + offset) * inner,
                    g.data() + (o * full + offset + sizes[i]) * inner,
                    dx.data() + o * sizes[i] * inner);
        AccumulateGrad(*nodes[i], dx);
      }
      offset += sizes[i];
    }
  });
}

Var RepeatHeads(const Var& x, int64_t r) {
  if (r == 1) return x;
  const Shape& s = x.shape();  // (B, G, S, hs)
  TVLAB_CHECK_EQ(s.size(), 4u);
  const int64_t b = s[0], g = s[1], block = s[2] * s[3];
  Tensor y = Tensor::Zeros({b, g * r, s[2], s[3]});  // (B, G*r, S, hs)
  const float* src = x.value().data();
  for (int64_t i = 0; i < b * g; ++i)
    for (int64_t j = 0; j < r; ++j)
      std::copy(src + i * block, src + (i + 1) * block, y.data() + (i * r + j) * block);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, b, g, r, block](const Tensor& grad) {
    Tensor dx = Tensor::Zeros(xn->value.shape());
    for (int64_t i = 0; i < b * g; ++i)
      for (int64_t j = 0; j < r; ++j)
        for (int64_t e = 0; e < block; ++e)
          dx.data()[i * block + e] += grad.data()[(i * r + j) * block + e];
    AccumulateGrad(*xn, dx);
  });
}

Var Sum(const Var& x) {
  Tensor out = Tensor::Zeros({});
  B().ReduceSumTo(x.value().data(), x.shape(), out.data(), {});
  auto xn = x.node();
  return MakeResult(out, {x}, [xn](const Tensor& g) {
    AccumulateGrad(*xn, Tensor::Full(xn->value.shape(), g.item()));
  });
}

Var Mean(const Var& x) { return Scale(Sum(x), 1.0f / static_cast<float>(x.value().numel())); }

Var MeanLastDim(const Var& x) {
  Shape keep = x.shape();
  const int64_t cols = keep.back();
  keep.back() = 1;
  Tensor out = Tensor::Zeros(keep);
  const int64_t rows = out.numel();
  const float* src = x.value().data();
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += src[r * cols + c];
    out.data()[r] = static_cast<float>(sum / cols);
  }
  auto xn = x.node();
  return MakeResult(out, {x}, [xn, rows, cols](const Tensor& g) {
    Tensor dx = Tensor::Zeros(xn->value.shape());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) dx.data()[r * cols + c] = g.data()[r] / cols;
    AccumulateGrad(*xn, dx);
  });
}

Var Embedding(const Var& table, const std::vector<int32_t>& ids) {
  const int64_t vocab = table.dim(0), cols = table.dim(1), n = static_cast<int64_t>(ids.size());
  for (int32_t id : ids) TVLAB_CHECK(id >= 0 && id < vocab) << "token id " << id << " vocab " << vocab;
  Tensor out = Tensor::Empty({n, cols});
  B().Gather(table.value().data(), cols, ids.data(), n, out.data());
  auto tn = table.node();
  return MakeResult(out, {table}, [tn, ids, cols, n](const Tensor& g) {
    Tensor dt = Tensor::Zeros(tn->value.shape());
    B().ScatterAdd(g.data(), cols, ids.data(), n, dt.data());
    AccumulateGrad(*tn, dt);
  });
}

Var CrossEntropy(const Var& logits, const std::vector<int32_t>& targets, int32_t ignore_index,
                 float label_smoothing) {
  TVLAB_CHECK_EQ(logits.rank(), 2);
  const int64_t rows = logits.dim(0), cols = logits.dim(1);
  TVLAB_CHECK_EQ(rows, static_cast<int64_t>(targets.size()));
  int64_t counted = 0;
  for (int32_t t : targets) {
    if (t == ignore_index) continue;
    TVLAB_CHECK(t >= 0 && t < cols) << "target " << t << " with " << cols << " classes";
    ++counted;
  }
  Tensor loss_rows = Tensor::Empty({rows}), probs = Tensor::Empty({rows, cols});
  B().CrossEntropy(logits.value().data(), targets.data(), rows, cols, ignore_index,
                   label_smoothing, loss_rows.data(), probs.data());
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += loss_rows.data()[r];
  const float denom = static_cast<float>(std::max<int64_t>(counted, 1));
  Tensor loss = Tensor::Scalar(static_cast<float>(total / denom));
  auto ln = logits.node();
  return MakeResult(loss, {logits}, [=](const Tensor& g) {
    Tensor dl = Tensor::Empty({rows, cols});
    B().CrossEntropyBackward(probs.data(), targets.data(), rows, cols, ignore_index,
                             label_smoothing, g.item() / denom, dl.data());
    AccumulateGrad(*ln, dl);
  });
}

Var Dropout(const Var& x, float p, const RngStream& stream) {
  if (p <= 0.0f) return x;
  const int64_t n = x.value().numel();
  // Each 32-bit draw decides two elements with 16 bits each: element i is
  // dropped when its 16-bit value < round(p * 65536) (so p is exact to 1e-5)
  // at half the Philox work.
  std::vector<uint32_t> words((n + 1) / 2);
  stream.Words(0, words.size(), words.data());
  const uint32_t threshold = static_cast<uint32_t>(std::lround(p * 65536.0f));
  const float keep_scale = 1.0f / (1.0f - p);
  Tensor mask = Tensor::Empty(x.shape());
  float* m = mask.data();
  for (int64_t i = 0; i < n; ++i) {
    uint32_t half = (words[i >> 1] >> ((i & 1) * 16)) & 0xFFFFu;
    m[i] = half < threshold ? 0.0f : keep_scale;
  }
  Tensor y = BinaryValue(BinaryOp::kMul, x.value(), mask);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, mask](const Tensor& g) {
    AccumulateGrad(*xn, BinaryValue(BinaryOp::kMul, g, mask));
  });
}

}  // namespace tvlab
