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

// A recorded call as a step of a chain over n elements.
struct Candidate {
  PointwiseStep step;
  int64_t n = 0;
};

std::optional<Candidate> FromBinary(const KernelCall& call) {
  const auto* args = ArgumentsOf<kernel_signature::Binary>(call);
  if (args == nullptr) return std::nullopt;
  const auto& [op, a, a_shape, b, b_shape, out, out_shape] = *args;
  if (a_shape != out_shape || b_shape != out_shape) return std::nullopt;  // broadcasting: not one pass
  Candidate c;
  c.step.kind = PointwiseStep::Kind::kBinary;
  c.step.op = op, c.step.a = a, c.step.b = b, c.step.out = out;
  c.n = NumElements(out_shape);
  return c;
}

std::optional<Candidate> FromRelu(const KernelCall& call) {
  if (const auto* args = ArgumentsOf<kernel_signature::Unary>(call)) {
    const auto& [op, x, y, n] = *args;
    if (op != UnaryOp::kRelu) return std::nullopt;  // only ReLU: exact per element on every backend
    Candidate c;
    c.step.kind = PointwiseStep::Kind::kRelu;
    c.step.a = x, c.step.out = y, c.n = n;
    return c;
  }
  if (const auto* args = ArgumentsOf<kernel_signature::UnaryBackward>(call)) {
    const auto& [op, x, y, dy, dx, n] = *args;
    if (op != UnaryOp::kRelu) return std::nullopt;
    Candidate c;
    c.step.kind = PointwiseStep::Kind::kReluBackward;
    c.step.a = x, c.step.b = y, c.step.c = dy, c.step.out = dx, c.n = n;
    return c;
  }
  return std::nullopt;
}

std::optional<Candidate> FromDropoutMask(const KernelCall& call) {
  const auto* args = ArgumentsOf<kernel_signature::DropoutMask>(call);
  if (args == nullptr) return std::nullopt;
  const auto& [stream, p, mask, n] = *args;
  Candidate c;
  c.step.kind = PointwiseStep::Kind::kDropoutMask;
  c.step.stream = stream, c.step.p = p, c.step.out = mask, c.n = n;
  return c;
}

std::optional<Candidate> AsStep(const RecordedOp& op) {
  if (op.kind != RecordedOp::Kind::kKernel) return std::nullopt;
  std::optional<Candidate> c = FromBinary(*op.call);
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
    std::optional<Candidate> c = AsStep(op);
    if (!c) {
      Flush();
      out_.push_back(std::move(op));
      return;
    }
    std::vector<uintptr_t> buffers = Buffers(c->step);
    if (!run_.empty() && (c->n != n_ || !JoinsCleanly(run_buffers_, buffers, c->n))) Flush();
    if (run_.empty() && !JoinsCleanly({}, buffers, c->n)) {  // overlapping within one call: leave it
      out_.push_back(std::move(op));
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
      out_.push_back(std::move(chain));
      ++summary_.chains;
      summary_.calls += static_cast<int>(run_ops_.size());
    } else {
      for (RecordedOp& op : run_ops_) out_.push_back(std::move(op));
    }
    run_.clear(), run_ops_.clear(), run_buffers_.clear();
  }

  size_t size() const { return out_.size(); }
  std::vector<RecordedOp> Take() { return std::move(out_); }
  FusionSummary summary() const { return summary_; }

 private:
  uint64_t key_;
  std::vector<RecordedOp> out_;
  std::vector<PointwiseStep> run_;
  std::vector<RecordedOp> run_ops_;
  std::vector<uintptr_t> run_buffers_;
  int64_t n_ = 0;
  FusionSummary summary_;
};

}  // namespace

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
  recording->ops = fuser.Take();
  recording->backward_begin = backward_begin;
  return fuser.summary();
}

}  // namespace capture
}  // namespace tvlab
