#include "framework/autograd/var.h"

#include <unordered_set>
#include <utility>

#include "framework/autograd/grad_accumulation.h"

#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {
thread_local bool grad_enabled = true;
// Nodes whose grad shares its storage with a tensor someone else holds (it
// was stored without a copy by AccumulateGrad): the next gradient is added
// into a fresh tensor, never in place (copy-on-write). Emptied by Backward,
// which gives leaves still listed a copy of their own.
thread_local std::unordered_set<const Node*> shared_grads;

void CheckGradShape(const Node& node, const Tensor& grad) {
  TVLAB_CHECK(grad.shape() == node.value.shape())
      << "gradient " << ShapeToString(grad.shape()) << " for value "
      << ShapeToString(node.value.shape());
}

// node.grad += grad: in place when node.grad is its own, else into a fresh
// tensor (the same one pass over memory, without the clone).
void AddInto(Node& node, const Tensor& grad) {
  if (shared_grads.erase(&node) == 0) {
    CurrentBackend().Binary(BinaryOp::kAdd, node.grad.ptr(), node.grad.shape(), grad.ptr(),
                            grad.shape(), node.grad.ptr(), node.grad.shape());
    return;
  }
  Tensor sum = Tensor::Empty(node.grad.shape());
  CurrentBackend().Binary(BinaryOp::kAdd, node.grad.ptr(), node.grad.shape(), grad.ptr(),
                          grad.shape(), sum.ptr(), sum.shape());
  node.grad = std::move(sum);
}
}  // namespace

Var::Var(Tensor value, bool requires_grad) : node_(std::make_shared<Node>()) {
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
}

bool GradEnabled() { return grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }

Var MakeResult(Tensor value, const std::vector<Var>& inputs,
               std::function<void(const Tensor& grad)> backward) {
  Var out(std::move(value));
  if (!grad_enabled) return out;
  bool any = false;
  for (const Var& in : inputs) any = any || in.requires_grad();
  if (!any) return out;
  Node& node = *out.node();
  node.requires_grad = true;
  for (const Var& in : inputs) node.inputs.push_back(in.node());
  node.backward = std::move(backward);
  return out;
}

void AccumulateGrad(Node& node, const Tensor& grad) {
  if (!node.requires_grad) return;
  CheckGradShape(node, grad);
  if (!node.grad.defined()) {
    node.grad = grad;  // shared, not cloned: e.g. both inputs of an Add get it
    shared_grads.insert(&node);
    return;
  }
  AddInto(node, grad);
}

void MoveGrad(Node& from, Node& to) {
  to.grad = std::move(from.grad);
  from.grad = Tensor();
  if (shared_grads.erase(&from) > 0) shared_grads.insert(&to);
  else shared_grads.erase(&to);
}

void AccumulateOwnedGrad(Node& node, Tensor&& grad) {
  if (!node.requires_grad) return;
  CheckGradShape(node, grad);
  if (!node.grad.defined()) {
    node.grad = std::move(grad);
    return;
  }
  AddInto(node, grad);
}

float* GradToAddInto(Node& node) {
  if (!node.requires_grad || !node.grad.defined() || shared_grads.count(&node) > 0) return nullptr;
  return node.grad.ptr();
}

const float* GradSoFar(const Node& node) {
  return node.requires_grad && node.grad.defined() ? node.grad.ptr() : nullptr;
}

void SetSummedGrad(Node& node, Tensor&& sum) {
  CheckGradShape(node, sum);
  node.grad = std::move(sum);
  shared_grads.erase(&node);
}

void Backward(const Var& root) {
  TVLAB_CHECK(root.defined() && root.value().numel() == 1) << "Backward needs a scalar";
  if (!root.requires_grad()) return;
  Backward(root, Tensor::Full(root.shape(), 1.0f));
}

void Backward(const Var& root, const Tensor& seed) {
  TVLAB_CHECK(root.defined()) << "Backward of an undefined Var";
  if (!root.requires_grad()) return;
  // Topological order by iterative depth-first search.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack = {{root.node().get(), 0}};
  seen.insert(root.node().get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Node* in = node->inputs[next++].get();
      if (in->requires_grad && seen.insert(in).second) stack.push_back({in, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  AccumulateGrad(*root.node(), seed);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    if (!node->backward || !node->grad.defined()) continue;
    node->backward(node->grad);
    node->grad = Tensor();  // interior gradients are not kept
    shared_grads.erase(node);
  }
  // Leaves keep their gradients, and the optimizer and clipping write into
  // them: one still shared gets its own copy. Only this pass's nodes are
  // settled: an enclosing pass (Checkpoint's backward runs inside one)
  // still tracks its own.
  for (Node* node : order) {
    if (shared_grads.erase(node) && node->grad.defined()) node->grad = node->grad.Clone();
  }
}

}  // namespace tvlab
