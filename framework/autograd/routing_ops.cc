// The routing ops: one kernel forward, one kernel backward each.

#include "framework/autograd/routing_ops.h"

#include <utility>

#include "framework/autograd/grad_accumulation.h"
#include "framework/autograd/ops_internal.h"
#include "framework/core/check.h"

namespace tvlab {

using ops_internal::B;

TopKResult TopK(const Var& x, int64_t k) {
  TVLAB_CHECK_EQ(x.rank(), 2);
  const int64_t rows = x.dim(0), cols = x.dim(1);
  TVLAB_CHECK(k >= 1 && k <= cols) << "top-" << k << " of " << cols;
  Tensor values = Tensor::Empty({rows, k});  // (R, k)
  DeviceInts indices = DeviceInts::Empty(rows * k);
  B().TopKRows(x.value().ptr(), rows, cols, k, values.ptr(), indices.ptr());
  auto xn = x.node();
  Var out = MakeResult(values, {x}, [xn, indices, rows, cols, k](const Tensor& g) {
    Tensor dx = Tensor::Empty({rows, cols});  // (R, cols)
    B().TopKRowsBackward(g.ptr(), indices.ptr(), rows, cols, k, dx.ptr());
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
  return {out, indices};
}

ExpertSlots RouteToExpertSlots(const DeviceInts& experts, int64_t tokens, int64_t k,
                               int64_t num_experts, int64_t capacity) {
  TVLAB_CHECK_EQ(experts.size(), tokens * k);
  ExpertSlots r;
  r.tokens = tokens, r.k = k, r.num_experts = num_experts, r.capacity = capacity;
  r.slots = DeviceInts::Empty(tokens * k);
  r.slot_assignments = DeviceInts::Empty(r.num_slots());
  r.demand = Tensor::Empty({num_experts});  // (E)
  B().RouteToExpertSlots(experts.ptr(), tokens, k, num_experts, capacity, r.slots.ptr(),
                         r.slot_assignments.ptr(), r.demand.ptr());
  return r;
}

Var DispatchToSlots(const Var& x, const ExpertSlots& r) {
  TVLAB_CHECK(x.rank() == 2 && x.dim(0) == r.tokens) << ShapeToString(x.shape());
  const int64_t cols = x.dim(1);
  Tensor out = Tensor::Empty({r.num_slots(), cols});  // (S, C)
  B().DispatchToSlots(x.value().ptr(), cols, r.slot_assignments.ptr(), r.num_slots(), r.k,
                      out.ptr());
  auto xn = x.node();
  return MakeResult(out, {x}, [xn, r, cols](const Tensor& g) {
    Tensor dx = Tensor::Empty({r.tokens, cols});  // (N, C)
    B().DispatchToSlotsBackward(g.ptr(), cols, r.slots.ptr(), r.tokens, r.k, dx.ptr());
    AccumulateOwnedGrad(*xn, std::move(dx));
  });
}

Var CombineFromSlots(const Var& expert_out, const Var& gates, const ExpertSlots& r) {
  TVLAB_CHECK(expert_out.rank() == 2 && expert_out.dim(0) == r.num_slots())
      << ShapeToString(expert_out.shape());
  TVLAB_CHECK(gates.rank() == 2 && gates.dim(0) == r.tokens && gates.dim(1) == r.k)
      << ShapeToString(gates.shape());
  const int64_t cols = expert_out.dim(1);
  Tensor y = Tensor::Empty({r.tokens, cols});  // (N, C)
  B().CombineFromSlots(expert_out.value().ptr(), cols, r.slots.ptr(), gates.value().ptr(),
                       r.tokens, r.k, y.ptr());
  auto en = expert_out.node(), gn = gates.node();
  return MakeResult(y, {expert_out, gates}, [en, gn, r, cols](const Tensor& g) {
    Tensor d_expert_out = Tensor::Empty({r.num_slots(), cols});  // (S, C)
    Tensor d_gates = Tensor::Empty({r.tokens, r.k});             // (N, k)
    B().CombineFromSlotsBackward(en->value.ptr(), cols, r.slots.ptr(), r.slot_assignments.ptr(),
                                 r.num_slots(), gn->value.ptr(), r.tokens, r.k, g.ptr(),
                                 d_expert_out.ptr(), d_gates.ptr());
    if (en->requires_grad) AccumulateOwnedGrad(*en, std::move(d_expert_out));
    if (gn->requires_grad) AccumulateOwnedGrad(*gn, std::move(d_gates));
  });
}

}  // namespace tvlab
