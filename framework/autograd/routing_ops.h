#ifndef TVLAB_FRAMEWORK_AUTOGRAD_ROUTING_OPS_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_ROUTING_OPS_H_

// Differentiable mixture-of-experts routing on the Backend's routing kernels
// (kernels.def, "Mixture-of-experts routing"): top-k, expert slots, dispatch
// of token rows into the slots and the gate-weighted combine back. Every
// tensor stays on the device; shapes are fixed by (N, k, E, capacity), so a
// forward reads nothing back to the host. Legend: N tokens, C model width,
// E experts, k choices per token, S = E * capacity slots.

#include <cstdint>

#include "framework/autograd/var.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

struct TopKResult {
  Var values;          // (R, k), differentiable: the gradient goes to the chosen entries
  DeviceInts indices;  // (R * k) column of each value
};
// The k largest entries of every row of x (R, cols), largest first (ties:
// the smaller column first). REQUIRES: 1 <= k <= cols.
TopKResult TopK(const Var& x, int64_t k);

// Where each assignment of N tokens to k experts went (not differentiable).
struct ExpertSlots {
  int64_t tokens = 0, k = 0, num_experts = 0, capacity = 0;
  DeviceInts slots;             // (N * k) slot of each assignment, -1 = dropped
  DeviceInts slot_assignments;  // (S) t * k + j of the assignment in each slot, -1 = empty
  Tensor demand;                // (E) assignments per expert before dropping
  int64_t num_slots() const { return num_experts * capacity; }
};
// Places experts (N * k, values in [0, E)) in E * capacity slots, first
// choices first (kernels.def RouteToExpertSlots).
ExpertSlots RouteToExpertSlots(const DeviceInts& experts, int64_t tokens, int64_t k,
                               int64_t num_experts, int64_t capacity);

// x (N, C) -> (S, C): each slot's token row, zeros in empty slots.
Var DispatchToSlots(const Var& x, const ExpertSlots& slots);
// expert_out (S, C), gates (N, k) -> (N, C): sum_j gates[t, j] *
// expert_out[slot of (t, j)], dropped assignments contributing nothing.
Var CombineFromSlots(const Var& expert_out, const Var& gates, const ExpertSlots& slots);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_ROUTING_OPS_H_
