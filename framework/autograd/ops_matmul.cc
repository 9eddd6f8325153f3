// MatMul and Linear (ops.h): one GEMM forward (with the bias as its
// epilogue), two in backward.

#include "framework/autograd/ops.h"

#include <algorithm>
#include <utility>

#include "framework/autograd/matmul_precision.h"
#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/kept_outputs.h"
#include "framework/autograd/ops_internal.h"
#include "framework/core/check.h"

namespace tvlab {

using ops_internal::B;
using ops_internal::ReduceTo;

namespace {

// C = op(A) op(B): dop(A) = G op(B)^T, added into A's own gradient when it
// has one (beta 1: grad_accumulation.h), else into a fresh tensor.
void AddGradOfA(const Tensor& g, const GemmDesc& d, Node& an, const Node& bn) {
  float* into = GradToAddInto(an);
  Tensor da = into != nullptr ? Tensor() : Tensor::Empty(an.value.shape());
  if (into == nullptr) into = da.ptr();
  GemmDesc e;
  e.batch = d.batch, e.k = d.n, e.stride_c = d.m * d.k, e.precision = d.precision;
  e.beta = da.defined() ? 0.0f : 1.0f;
  if (!d.trans_a) {  // dA (m,k) = G (m,n) @ op(B)^T (n,k)
    e.m = d.m, e.n = d.k, e.trans_a = false, e.trans_b = !d.trans_b;
    e.stride_a = d.m * d.n, e.stride_b = d.stride_b;
    B().Gemm(e, g.ptr(), bn.value.ptr(), into);
  } else {  // dA (k,m) = op(B) (k,n) @ G^T (n,m)
    e.m = d.k, e.n = d.m, e.trans_a = d.trans_b, e.trans_b = true;
    e.stride_a = d.stride_b, e.stride_b = d.m * d.n;
    B().Gemm(e, bn.value.ptr(), g.ptr(), into);
  }
  if (da.defined()) AccumulateOwnedGrad(an, std::move(da));
}

// dop(B) = op(A)^T G; with a shared B, summed over the batch (one GEMM over
// batch * m rows). `bias`: a Linear's bias node, whose gradient (G's rows
// summed) comes from the same pass (GemmAndColumnSums), or null.
void AddGradOfB(const Tensor& g, const GemmDesc& d, bool shared_b, const Node& an, Node& bn, Node* bias) {
  const int64_t batch = shared_b ? 1 : d.batch;
  const int64_t rows = shared_b ? d.batch * d.m : d.m;
  TVLAB_CHECK(!(shared_b && d.trans_a)) << "shared B with transposed A";
  Tensor db = Tensor::Empty(bn.value.shape());
  GemmDesc e;
  e.batch = batch, e.k = rows, e.stride_c = d.k * d.n, e.precision = d.precision;
  if (!d.trans_b) {  // dB (k,n) = op(A)^T (k,m) @ G (m,n)
    e.m = d.k, e.n = d.n, e.trans_a = !d.trans_a, e.trans_b = false;
    e.stride_a = d.m * d.k, e.stride_b = d.m * d.n;
    B().Gemm(e, an.value.ptr(), g.ptr(), db.ptr());
  } else {  // dB (n,k) = G^T (n,m) @ op(A) (m,k)
    e.m = d.n, e.n = d.k, e.trans_a = true, e.trans_b = d.trans_a;
    e.stride_a = d.m * d.n, e.stride_b = d.m * d.k;
    if (bias != nullptr) {  // (n) = G (rows, n) summed over its rows
      Tensor dbias = Tensor::Empty(bias->value.shape());
      B().GemmAndColumnSums(e, g.ptr(), an.value.ptr(), db.ptr(), dbias.ptr());
      AccumulateOwnedGrad(*bias, std::move(dbias));
    } else {
      B().Gemm(e, g.ptr(), an.value.ptr(), db.ptr());
    }
  }
  AccumulateOwnedGrad(bn, std::move(db));
}

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
  GemmDesc d;
  d.batch = batch, d.m = m, d.n = n, d.k = k, d.trans_a = trans_a, d.trans_b = trans_b;
  d.stride_a = m * k, d.stride_b = shared_b ? 0 : k * n, d.stride_c = m * n;
  d.precision = CurrentMatMulPrecision();  // runtime.precision
  if (bias != nullptr)
    TVLAB_CHECK(bias->shape() == Shape({n})) << "bias " << ShapeToString(bias->shape()) << " for " << n << " columns";
  Tensor out;  // (..., m, n): a product selective checkpointing keeps (kept_outputs.h)
  if (!kept_outputs::Take(out_shape, &out)) {
    out = Tensor::Empty(out_shape);
    if (bias != nullptr) {
      B().GemmBias(d, a.value().ptr(), b.value().ptr(), bias->value().ptr(), out.ptr());
    } else {
      B().Gemm(d, a.value().ptr(), b.value().ptr(), out.ptr());
    }
    kept_outputs::Keep(out);
  }
  auto an = a.node(), bn = b.node();
  auto biasn = bias != nullptr ? bias->node() : nullptr;
  std::vector<Var> inputs = {a, b};
  if (bias != nullptr) inputs.push_back(*bias);
  return MakeResult(out, inputs, [an, bn, biasn, d, shared_b](const Tensor& g) {
    // A Linear's weight and bias gradients in one pass over G when both are
    // wanted (GemmAndColumnSums); else d bias (n) = G summed over every row.
    const bool bias_grad = biasn != nullptr && biasn->requires_grad;
    const bool together = bias_grad && bn->requires_grad && shared_b && d.trans_b && biasn != an && biasn != bn;
    if (bias_grad && !together) AccumulateGrad(*biasn, ReduceTo(g, biasn->value.shape()));
    if (an->requires_grad) AddGradOfA(g, d, *an, *bn);
    if (bn->requires_grad) AddGradOfB(g, d, shared_b, *an, *bn, together ? biasn.get() : nullptr);
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

}  // namespace tvlab
