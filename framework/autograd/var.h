#ifndef TVLAB_FRAMEWORK_AUTOGRAD_VAR_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_VAR_H_

// Reverse-mode automatic differentiation on a dynamic tape (define-by-run, as
// in PyTorch). A Var is a tensor value plus, when it requires a gradient, the
// node that knows how to push its gradient to its inputs. Plugins write only
// forward code from the ops in ops.h; a fused op supplies its own backward
// closure next to its forward (see ops*.cc).

#include <functional>
#include <memory>
#include <vector>

#include "framework/tensor/tensor.h"

namespace tvlab {

struct Node {
  Tensor value;
  Tensor grad;  // undefined until a gradient reaches this node
  bool requires_grad = false;
  std::vector<std::shared_ptr<Node>> inputs;
  // Given this node's gradient, accumulates into the inputs' gradients.
  std::function<void(const Tensor& grad)> backward;
};

class Var {
 public:
  Var() = default;
  explicit Var(Tensor value, bool requires_grad = false);

  bool defined() const { return node_ != nullptr; }
  const Tensor& value() const { return node_->value; }
  Tensor& mutable_value() { return node_->value; }
  // The accumulated gradient (undefined before Backward reaches it).
  const Tensor& grad() const { return node_->grad; }
  Tensor& mutable_grad() { return node_->grad; }
  bool requires_grad() const { return node_ && node_->requires_grad; }
  const Shape& shape() const { return node_->value.shape(); }
  int64_t dim(int64_t d) const { return node_->value.dim(d); }
  int64_t rank() const { return node_->value.rank(); }
  void ZeroGrad() { node_->grad = Tensor(); }

  const std::shared_ptr<Node>& node() const { return node_; }

 private:
  std::shared_ptr<Node> node_;
};

// Creates the result of an op. If gradients are enabled and some input
// requires one, the result records `backward` and its inputs.
Var MakeResult(Tensor value, const std::vector<Var>& inputs,
               std::function<void(const Tensor& grad)> backward);

// Adds `grad` into `node`'s gradient. `grad` may be shared: a first gradient
// is kept without a copy and the next one is added into a fresh tensor, so
// `grad` is never written; after Backward every leaf's grad is its own.
void AccumulateGrad(Node& node, const Tensor& grad);
// Moves `from`'s gradient (undefined or not, shared or its own) to `to`,
// leaving `from` without one: a nested pass (Checkpoint's recomputation)
// continues the sum its input's node had reached, so the additions happen
// in the order, and with the rounding, of the pass without checkpoints.
void MoveGrad(Node& from, Node& to);

// Runs the backward pass from a scalar `root` (seeded with d root = 1).
void Backward(const Var& root);
// Runs the backward pass from `root` of any shape, seeded with d root =
// `seed` (same shape). It may run inside another backward pass (Checkpoint
// does): it settles only the nodes it reaches.
void Backward(const Var& root, const Tensor& seed);

// Whether ops record the tape (thread-local; on by default).
bool GradEnabled();

// Disables taping in a scope (evaluation, decoding).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();

 private:
  bool previous_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_VAR_H_
