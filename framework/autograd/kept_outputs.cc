#include "framework/autograd/kept_outputs.h"

#include <utility>

#include "framework/core/check.h"

namespace tvlab {
namespace kept_outputs {
namespace {
thread_local Store* current_store = nullptr;
thread_local Mode current_mode = Mode::kRecord;
}  // namespace

Scope::Scope(Store* store, Mode mode) : previous_store_(current_store), previous_mode_(current_mode) {
  current_store = store;
  current_mode = mode;
}

Scope::~Scope() {
  current_store = previous_store_;
  current_mode = previous_mode_;
}

bool Take(const Shape& shape, Tensor* out) {
  if (!Take(out)) return false;
  TVLAB_CHECK(out->shape() == shape) << "selective checkpointing: kept output " << ShapeToString(out->shape())
                                     << " where the rerun computes " << ShapeToString(shape);
  return true;
}

bool Take(Tensor* out) {
  if (current_store == nullptr || current_mode != Mode::kReplay) return false;
  TVLAB_CHECK(!current_store->tensors.empty())
      << "selective checkpointing: the rerun asks for more kept outputs than the " << current_store->kept
      << " the first run kept (the checkpointed function is not deterministic)";
  *out = std::move(current_store->tensors.front());
  current_store->tensors.pop_front();
  return true;
}

void Keep(const Tensor& value) {
  if (current_store == nullptr || current_mode != Mode::kRecord) return;
  current_store->tensors.push_back(value);
  ++current_store->kept;
}

}  // namespace kept_outputs
}  // namespace tvlab
