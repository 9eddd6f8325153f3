// Elementwise ops (ops.h): binary with broadcasting, unary, the sums and
// RoPE's turn, plus the broadcasting helpers the other op files share
// (ops_internal.h).

#include "framework/autograd/ops.h"

#include <algorithm>
#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/ops_internal.h"
#include "framework/core/check.h"

namespace tvlab {

namespace ops_internal {

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

Tensor ReduceTo(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  Tensor out = Tensor::Zeros(shape);
  B().ReduceSumTo(grad.ptr(), grad.shape(), out.ptr(), shape);
  return out;
}

}  // namespace ops_internal

using ops_internal::B;
using ops_internal::BinaryValue;
using ops_internal::ReduceTo;

namespace {

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

namespace {
// y = x turned, x (R, T, H, D) with cos and sin (T, D/2); the backward turns
// the gradient back (the transpose of a rotation is its inverse).
Var RotaryRows(const Var& x, const Tensor& cos, const Tensor& sin, bool interleaved, int64_t rows,
               int64_t t, int64_t heads) {
  const int64_t d = x.dim(x.rank() - 1);
  Tensor y = Tensor::Empty(x.shape());  // (R, T, H, D)
  B().Rotary(x.value().ptr(), cos.ptr(), sin.ptr(), y.ptr(), rows, t, heads, d, interleaved,
             /*inverse=*/false);
  auto xn = x.node();
  return MakeResult(y, {x}, [xn, cos, sin, rows, t, heads, d, interleaved](const Tensor& g) {
    Tensor dx = Tensor::Empty(xn->value.shape());  // (R, T, H, D)
    B().Rotary(g.ptr(), cos.ptr(), sin.ptr(), dx.ptr(), rows, t, heads, d, interleaved,
               /*inverse=*/true);
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

void CheckRotaryTables(const Var& x, int64_t t, int64_t d, const Tensor& cos, const Tensor& sin,
                       const char* op) {
  TVLAB_CHECK(d % 2 == 0 && cos.shape() == Shape({t, d / 2}) && sin.shape() == cos.shape())
      << op << " of " << ShapeToString(x.shape()) << " needs cos and sin (" << t << ", " << d / 2
      << "), got " << ShapeToString(cos.shape()) << " and " << ShapeToString(sin.shape());
}
}  // namespace

Var Rotary(const Var& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  const int r = static_cast<int>(x.rank());
  TVLAB_CHECK(r >= 2) << "Rotary needs (..., T, D), got " << ShapeToString(x.shape());
  const int64_t t = x.dim(r - 2), d = x.dim(r - 1);
  CheckRotaryTables(x, t, d, cos, sin, "Rotary");
  const int64_t rows = t * d == 0 ? 0 : x.value().numel() / (t * d);
  return RotaryRows(x, cos, sin, interleaved, rows, t, /*heads=*/1);  // (..., T, D)
}

Var RotaryTokenMajor(const Var& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  TVLAB_CHECK(x.rank() == 4) << "RotaryTokenMajor needs (B, T, H, D), got " << ShapeToString(x.shape());
  CheckRotaryTables(x, x.dim(1), x.dim(3), cos, sin, "RotaryTokenMajor");
  return RotaryRows(x, cos, sin, interleaved, x.dim(0), x.dim(1), x.dim(2));  // (B, T, H, D)
}

}  // namespace tvlab
