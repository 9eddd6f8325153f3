#ifndef TVLAB_FRAMEWORK_AUTOGRAD_KEPT_OUTPUTS_H_
#define TVLAB_FRAMEWORK_AUTOGRAD_KEPT_OUTPUTS_H_

// autograd-internal: the store of selective checkpointing
// (CheckpointPolicy::kKeepMatMuls, checkpoint.h). While Checkpoint runs the
// function off the tape it records the outputs of the ops whose results are
// kept (MatMul/Linear's product, FusedAttention's output and log-sum-exp,
// and the output of a plain Checkpoint nested inside, whose internals are
// never kept: a query chunk keeps its output only), in call order; while its backward runs the function again on the tape it
// replays them: those ops hand back the kept tensors instead of computing
// them, and every other op (norms, activations, dropout, residual adds,
// reshapes) is computed again. The function being deterministic, the n-th
// kept op of the rerun is the n-th of the first run, so the rerun's values
// are those of the first run to the bit.

#include <cstddef>
#include <deque>

#include "framework/tensor/tensor.h"

namespace tvlab {
namespace kept_outputs {

// The kept tensors of one checkpointed call, oldest first.
struct Store {
  std::deque<Tensor> tensors;
  size_t kept = 0;  // how many were recorded in all (for the replay's check)
};

enum class Mode { kRecord, kReplay };

// Makes `store` the thread's current store in `mode` for the scope (null:
// none, so nested passes neither record nor replay), restoring the previous
// one after.
class Scope {
 public:
  Scope(Store* store, Mode mode);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Store* previous_store_;
  Mode previous_mode_;
};

// While a store replays: moves its oldest tensor into *out (CHECK: it has
// one, of `shape`) and returns true. Otherwise returns false: the op computes.
bool Take(const Shape& shape, Tensor* out);
// As Take, for an op that knows its output's shape only by computing it (a
// nested Checkpoint).
bool Take(Tensor* out);
// While a store records: keeps `value` (shared, not copied). Otherwise nothing.
void Keep(const Tensor& value);

}  // namespace kept_outputs
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_AUTOGRAD_KEPT_OUTPUTS_H_
