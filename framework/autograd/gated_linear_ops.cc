// GatedLinearScan (gated_linear_ops.h): one node for the output, whose
// backward computes every gradient in one kernel call, and one node for the
// final state that depends on it. A node has one output, so the state's
// gradient reaches the kernel through the state node: it runs first (it
// consumes the output node), stores its gradient for the output node's
// backward and, when the output node has no gradient of its own, gives it a
// zero one so that its backward runs.

#include "framework/autograd/gated_linear_ops.h"

#include <memory>
#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/ops_internal.h"
#include "framework/core/check.h"

namespace tvlab {

using ops_internal::B;

namespace {

GatedLinearScanDesc Describe(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                             const Var& state, int64_t chunk) {
  TVLAB_CHECK(q.rank() == 4) << ShapeToString(q.shape());
  GatedLinearScanDesc d;
  d.batch = q.dim(0), d.heads = q.dim(1), d.tokens = q.dim(2), d.key_dim = q.dim(3);
  d.value_dim = v.dim(3);
  d.gate_dim = log_gate.defined() ? log_gate.dim(3) : 0;
  d.chunk = chunk;
  CheckGatedLinearScanDesc(d);
  TVLAB_CHECK(k.shape() == q.shape()) << ShapeToString(k.shape());
  TVLAB_CHECK(v.shape() == Shape({d.batch, d.heads, d.tokens, d.value_dim}))
      << ShapeToString(v.shape());
  if (log_gate.defined())
    TVLAB_CHECK(log_gate.shape() == Shape({d.batch, d.heads, d.tokens, d.gate_dim}))
        << ShapeToString(log_gate.shape());
  if (state.defined())
    TVLAB_CHECK(state.shape() == Shape({d.batch, d.heads, d.key_dim, d.value_dim}))
        << ShapeToString(state.shape());
  return d;
}

}  // namespace

GatedLinearScanVars GatedLinearScan(const Var& q, const Var& k, const Var& v, const Var& log_gate,
                                    const Var& state, int64_t chunk) {
  const GatedLinearScanDesc d = Describe(q, k, v, log_gate, state, chunk);
  Tensor out = Tensor::Empty({d.batch, d.heads, d.tokens, d.value_dim});
  Tensor final_state = Tensor::Empty({d.batch, d.heads, d.key_dim, d.value_dim});
  const float* g = log_gate.defined() ? log_gate.value().ptr() : nullptr;
  const float* s0 = state.defined() ? state.value().ptr() : nullptr;
  B().GatedLinearScan(d, q.value().ptr(), k.value().ptr(), v.value().ptr(), g, s0, out.ptr(),
                      final_state.ptr());
  std::vector<Var> inputs = {q, k, v};
  if (log_gate.defined()) inputs.push_back(log_gate);
  if (state.defined()) inputs.push_back(state);
  auto dfinal = std::make_shared<Tensor>();  // the state node's gradient, if it has one
  auto qn = q.node(), kn = k.node(), vn = v.node();
  auto gn = log_gate.defined() ? log_gate.node() : nullptr;
  auto sn = state.defined() ? state.node() : nullptr;
  Var out_var = MakeResult(out, inputs, [=](const Tensor& dout) {
    Tensor dq = Tensor::Empty(qn->value.shape()), dk = Tensor::Empty(kn->value.shape());
    Tensor dv = Tensor::Empty(vn->value.shape());
    Tensor dg = gn != nullptr ? Tensor::Empty(gn->value.shape()) : Tensor();
    Tensor ds = sn != nullptr ? Tensor::Empty(sn->value.shape()) : Tensor();
    B().GatedLinearScanBackward(d, qn->value.ptr(), kn->value.ptr(), vn->value.ptr(),
                                gn != nullptr ? gn->value.ptr() : nullptr,
                                sn != nullptr ? sn->value.ptr() : nullptr, dout.ptr(),
                                dfinal->defined() ? dfinal->ptr() : nullptr, dq.ptr(), dk.ptr(),
                                dv.ptr(), gn != nullptr ? dg.ptr() : nullptr,
                                sn != nullptr ? ds.ptr() : nullptr);
    *dfinal = Tensor();
    AccumulateOwnedGrad(*qn, std::move(dq));
    AccumulateOwnedGrad(*kn, std::move(dk));
    AccumulateOwnedGrad(*vn, std::move(dv));
    if (gn != nullptr) AccumulateOwnedGrad(*gn, std::move(dg));
    if (sn != nullptr) AccumulateOwnedGrad(*sn, std::move(ds));
  });
  auto on = out_var.node();
  Var state_var = MakeResult(final_state, {out_var}, [dfinal, on](const Tensor& dstate) {
    *dfinal = dstate;
    if (!on->grad.defined()) AccumulateOwnedGrad(*on, Tensor::Zeros(on->value.shape()));
  });
  return {out_var, state_var};
}

}  // namespace tvlab
