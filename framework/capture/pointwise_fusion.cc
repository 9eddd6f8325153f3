#include "framework/capture/pointwise_fusion.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "framework/capture/kernel_call_of.h"
#include "framework/core/check.h"

namespace tvlab {
namespace capture {
namespace {

std::optional<ChainStep> FromBinary(const KernelCall& call) {
  const auto* args = ArgumentsOf<kernel_signature::Binary>(call);
  if (args == nullptr) return std::nullopt;
  const auto& [op, a, a_shape, b, b_shape, out, out_shape] = *args;
  if (a_shape != out_shape || b_shape != out_shape) return std::nullopt;  // broadcasting: not one pass
  ChainStep c;
  c.step.kind = PointwiseStep::Kind::kBinary;
  c.step.op = op, c.step.a = a, c.step.b = b, c.step.out = out;
  c.n = NumElements(out_shape);
  return c;
}

std::optional<ChainStep> FromRelu(const KernelCall& call) {
  if (const auto* args = ArgumentsOf<kernel_signature::Unary>(call)) {
    const auto& [op, x, y, n] = *args;
    if (op != UnaryOp::kRelu) return std::nullopt;  // only ReLU: exact per element on every backend
    ChainStep c;
    c.step.kind = PointwiseStep::Kind::kRelu;
    c.step.a = x, c.step.out = y, c.n = n;
    return c;
  }
  if (const auto* args = ArgumentsOf<kernel_signature::UnaryBackward>(call)) {
    const auto& [op, x, y, dy, dx, n] = *args;
    if (op != UnaryOp::kRelu) return std::nullopt;
    ChainStep c;
    c.step.kind = PointwiseStep::Kind::kReluBackward;
    // ReLU's derivative is x > 0, which is relu(x) > 0: x stands in for y,
    // exact whichever a backend reads, and y is not a read of the chain
    // (so a chain that wrote y may keep it in scratch: chain_scratch.h).
    c.step.a = x, c.step.b = x, c.step.c = dy, c.step.out = dx, c.n = n;
    (void)y;
    return c;
  }
  return std::nullopt;
}

std::optional<ChainStep> FromDropoutMask(const KernelCall& call) {
  const auto* args = ArgumentsOf<kernel_signature::DropoutMask>(call);
  if (args == nullptr) return std::nullopt;
  const auto& [stream, p, mask, n] = *args;
  ChainStep c;
  c.step.kind = PointwiseStep::Kind::kDropoutMask;
  c.step.stream = stream, c.step.p = p, c.step.out = mask, c.n = n;
  return c;
}

std::optional<ChainStep> AsStep(const RecordedOp& op) {
  if (op.kind != RecordedOp::Kind::kKernel) return std::nullopt;
  std::optional<ChainStep> c = FromBinary(*op.call);
  if (!c) c = FromRelu(*op.call);
  if (!c) c = FromDropoutMask(*op.call);
  if (c && c->n <= 0) return std::nullopt;
  return c;
}

std::vector<uintptr_t> Buffers(const PointwiseStep& s) {
  std::vector<uintptr_t> out;
  for (const float* p : {s.a, s.b, s.c, static_cast<const float*>(s.out)})
    if (p != nullptr) out.push_back(reinterpret_cast<uintptr_t>(p));  // compared, never dereferenced
  return out;
}

// Whether each of `more`'s buffers (n floats from each address) is one of
// `run`'s or overlaps none of them, and likewise among themselves.
bool JoinsCleanly(const std::vector<uintptr_t>& run, const std::vector<uintptr_t>& more, int64_t n) {
  const uintptr_t bytes = static_cast<uintptr_t>(n) * sizeof(float);
  auto clean = [bytes](uintptr_t x, uintptr_t y) { return x == y || x + bytes <= y || y + bytes <= x; };
  for (size_t i = 0; i < more.size(); ++i) {
    for (uintptr_t r : run)
      if (!clean(more[i], r)) return false;
    for (size_t j = 0; j < i; ++j)
      if (!clean(more[i], more[j])) return false;
  }
  return true;
}

// Collects runs and writes the rewritten operation list.
class Fuser {
 public:
  explicit Fuser(uint64_t key) : key_(key) {}

  void Add(RecordedOp op) {
    std::optional<ChainStep> c = AsStep(op);
    if (!c) {
      Flush();
      Emit(std::move(op));
      return;
    }
    std::vector<uintptr_t> buffers = Buffers(c->step);
    if (!run_.empty() && (c->n != n_ || !JoinsCleanly(run_buffers_, buffers, c->n))) Flush();
    if (run_.empty() && !JoinsCleanly({}, buffers, c->n)) {  // overlapping within one call: leave it
      Emit(std::move(op));
      return;
    }
    TVLAB_CHECK(op.call->key() == key_) << "FusePointwiseChains runs before the recording is replayed";
    n_ = c->n;
    run_.push_back(c->step);
    run_ops_.push_back(std::move(op));
    run_buffers_.insert(run_buffers_.end(), buffers.begin(), buffers.end());
  }

  // Ends the current run: one PointwiseChain for two or more calls.
  void Flush() {
    if (run_ops_.size() >= 2) {
      RecordedOp chain;
      chain.kind = RecordedOp::Kind::kKernel;
      chain.call = MakeKernelCall<kernel_signature::PointwiseChain>(Kernel::kPointwiseChain, &Backend::PointwiseChain,
                                                                    {run_, n_}, key_);
      for (size_t i = 0; i < run_ops_.size(); ++i) places_.push_back({out_.size(), i > 0});
      out_.push_back(std::move(chain));
      ++summary_.chains;
      summary_.calls += static_cast<int>(run_ops_.size());
    } else {
      for (RecordedOp& op : run_ops_) Emit(std::move(op));
    }
    run_.clear(), run_ops_.clear(), run_buffers_.clear();
  }

  size_t size() const { return out_.size(); }
  std::vector<RecordedOp> Take() { return std::move(out_); }
  FusionSummary summary() const { return summary_; }

  // Moves `events` (positions among the recorded calls) to the fused
  // operations' positions.
  void MoveEvents(std::vector<PoolEvent>* events) const {
    for (PoolEvent& e : *events) {
      if (e.op >= places_.size()) {  // after the last operation
        e.op = out_.size(), e.inside = false;
        continue;
      }
      e.inside = places_[e.op].inside;
      e.op = places_[e.op].op;
    }
  }

 private:
  // Where a recorded call went: the fused operation, and whether it is a
  // chain's second or later step.
  struct Place {
    size_t op;
    bool inside;
  };
  void Emit(RecordedOp op) {
    places_.push_back({out_.size(), false});
    out_.push_back(std::move(op));
  }

  uint64_t key_;
  std::vector<Place> places_;  // by recorded call, in order
  std::vector<RecordedOp> out_;
  std::vector<PointwiseStep> run_;
  std::vector<RecordedOp> run_ops_;
  std::vector<uintptr_t> run_buffers_;
  int64_t n_ = 0;
  FusionSummary summary_;
};

}  // namespace

std::optional<ChainStep> AsChainStep(const RecordedOp& op) {
  std::optional<ChainStep> c = AsStep(op);
  if (!c || !JoinsCleanly({}, Buffers(c->step), c->n)) return std::nullopt;
  return c;
}

FusionSummary FusePointwiseChains(StepRecording* recording) {
  Fuser fuser(recording->step);
  size_t backward_begin = recording->backward_begin;
  for (size_t i = 0; i < recording->ops.size(); ++i) {
    if (i == recording->backward_begin) {
      fuser.Flush();
      backward_begin = fuser.size();
    }
    fuser.Add(std::move(recording->ops[i]));
  }
  fuser.Flush();
  if (recording->backward_begin >= recording->ops.size()) backward_begin = fuser.size();
  fuser.MoveEvents(&recording->pool_events);
  recording->ops = fuser.Take();
  recording->backward_begin = backward_begin;
  return fuser.summary();
}

}  // namespace capture
}  // namespace tvlab
