#include "framework/capture/chain_scratch.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/capture/kernel_call_of.h"
#include "framework/capture/pointwise_fusion.h"

namespace tvlab {
namespace capture {
namespace {

constexpr size_t kStillHeld = std::numeric_limits<size_t>::max();

// Operations [begin, end) of the recording, during which a pool block held
// one tensor (end kStillHeld: held when the step ended).
struct Life {
  size_t begin = 0, end = kStillHeld;
};

// The lives of the step's pool blocks, from its pool events. A tensor
// taken between two steps of a chain lives from that chain on; one given
// back between two steps, up to and with that chain. A block whose lives
// would then overlap (given back and taken again inside one chain), or
// whose events do not pair up, has none.
class Lives {
 public:
  explicit Lives(const std::vector<PoolEvent>& events) {
    for (const PoolEvent& e : events) {
      Block& b = blocks_[e.block];
      const bool held = !b.lives.empty() && b.lives.back().end == kStillHeld;
      if (e.taken) {
        if (held || (!b.lives.empty() && e.op < b.lives.back().end)) b.trusted = false;
        b.lives.push_back({e.op, kStillHeld});
      } else if (held) {
        b.lives.back().end = e.inside ? e.op + 1 : e.op;
      } else {
        b.trusted = false;
      }
    }
  }

  // The life of `block` that operation `op` falls in.
  std::optional<Life> At(const void* block, size_t op) const {
    const auto it = blocks_.find(block);
    if (it == blocks_.end() || !it->second.trusted) return std::nullopt;
    for (const Life& life : it->second.lives)
      if (op >= life.begin && op < life.end) return life;
    return std::nullopt;
  }

 private:
  struct Block {
    std::vector<Life> lives;
    bool trusted = true;
  };
  std::unordered_map<const void*, Block> blocks_;
};

// The pool block `p` points into (null: none).
const void* BlockOf(const BufferPool& pool, const void* p) {
  return p != nullptr ? pool.BlockStart(p) : nullptr;
}

// The pool blocks each operation names a pointer into.
std::vector<std::vector<const void*>> BlocksNamed(const StepRecording& r, const BufferPool& pool) {
  std::vector<std::vector<const void*>> named(r.ops.size());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const RecordedOp& op = r.ops[i];
    std::vector<const void*> pointers;
    switch (op.kind) {
      case RecordedOp::Kind::kKernel: op.call->Pointers(&pointers); break;
      case RecordedOp::Kind::kFill: pointers = {op.fill_dst}; break;
      case RecordedOp::Kind::kCopy: pointers = {op.src, op.dst}; break;
      case RecordedOp::Kind::kUpload: pointers = {op.dst}; break;  // src is host memory
    }
    for (const void* p : pointers)
      if (const void* block = BlockOf(pool, p); block && std::count(named[i].begin(), named[i].end(), block) == 0)
        named[i].push_back(block);
  }
  return named;
}

bool Names(const std::vector<const void*>& named, const void* block) {
  return std::find(named.begin(), named.end(), block) != named.end();
}

// A chain operation's steps and n (null: not a chain).
using ChainArgs = std::tuple<std::vector<PointwiseStep>, int64_t>;
const ChainArgs* ChainOf(const RecordedOp& op) {
  return op.kind == RecordedOp::Kind::kKernel ? ArgumentsOf<kernel_signature::PointwiseChain>(*op.call) : nullptr;
}

void SetChain(RecordedOp& op, std::vector<PointwiseStep> steps, int64_t n) {
  op.call = MakeKernelCall<kernel_signature::PointwiseChain>(Kernel::kPointwiseChain, &Backend::PointwiseChain,
                                                             {std::move(steps), n}, op.call->key());
}

std::vector<const float*> Inputs(const PointwiseStep& s) { return {s.a, s.b, s.c}; }

// Whether every step of `steps` that touches `block` only reads `mask`
// itself (n floats).
bool OnlyReads(const std::vector<PointwiseStep>& steps, const BufferPool& pool, const void* block,
               const float* mask) {
  for (const PointwiseStep& s : steps) {
    if (BlockOf(pool, s.out) == block) return false;
    for (const float* in : Inputs(s))
      if (BlockOf(pool, in) == block && in != mask) return false;
  }
  return true;
}

// Whether the first step of chain `op` that touches `block` rewrites all
// of `out` (n floats) without reading the block.
bool RewritesFirst(const RecordedOp& op, const BufferPool& pool, const void* block, const float* out, int64_t n) {
  const ChainArgs* chain = ChainOf(op);
  if (chain == nullptr || std::get<1>(*chain) != n) return false;
  for (const PointwiseStep& s : std::get<0>(*chain)) {
    bool reads = false;
    for (const float* in : Inputs(s)) reads = reads || BlockOf(pool, in) == block;
    if (reads) return false;
    if (BlockOf(pool, s.out) == block) return s.out == out;
  }
  return false;
}

class Rewriter {
 public:
  Rewriter(StepRecording* r, const BufferPool& pool, bool keep_mask_bits)
      : r_(*r),
        pool_(pool),
        keep_mask_bits_(keep_mask_bits),
        lives_(r->pool_events),
        named_(BlocksNamed(*r, pool)) {}

  // Rewrite 1 for every mask step of a forward chain.
  void RedrawOrKeepMasks() {
    for (size_t w = 0; w < r_.backward_begin; ++w) {
      const ChainArgs* chain = ChainOf(r_.ops[w]);
      if (chain == nullptr) continue;
      std::vector<PointwiseStep> steps = std::get<0>(*chain);  // a copy: SetChain replaces the call
      const int64_t n = std::get<1>(*chain);
      bool kept = false;
      for (size_t j = 0; j < steps.size(); ++j)
        if (steps[j].kind == PointwiseStep::Kind::kDropoutMask) kept = RedrawOrKeepMask(w, &steps, j, n) || kept;
      if (kept) SetChain(r_.ops[w], std::move(steps), n);
    }
  }

  // Rewrite 2 for every step of every chain.
  void MarkScratch() {
    for (size_t c = 0; c < r_.ops.size(); ++c) {
      const ChainArgs* chain = ChainOf(r_.ops[c]);
      if (chain == nullptr) continue;
      std::vector<PointwiseStep> steps = std::get<0>(*chain);
      const int64_t n = std::get<1>(*chain);
      bool marked = false;
      for (PointwiseStep& s : steps) {
        if (s.scratch || !DeadAfter(c, s.out, n)) continue;
        s.scratch = marked = true;
        ++summary_.scratch_steps;
        summary_.bytes_not_written += n * static_cast<int64_t>(sizeof(float));
      }
      if (marked) SetChain(r_.ops[c], std::move(steps), n);
    }
  }

  ScratchSummary summary() const { return summary_; }

 private:
  // Step j of forward chain w (`steps`, its copy) draws a mask: when the
  // rest of its life only reads it, and only in the backward, each reader
  // first draws it again, or, where the backend keeps mask bits, reads it
  // from the bits step j now also writes. True when step j got bits.
  bool RedrawOrKeepMask(size_t w, std::vector<PointwiseStep>* steps, size_t j, int64_t n) {
    const float* mask = (*steps)[j].out;
    const void* block = BlockOf(pool_, mask);
    const std::optional<Life> life = block ? lives_.At(block, w) : std::nullopt;
    if (!life || life->end == kStillHeld) return false;
    const std::vector<PointwiseStep> rest(steps->begin() + j + 1, steps->end());
    if (!OnlyReads(rest, pool_, block, mask)) return false;
    std::vector<size_t> readers;
    for (size_t i = w + 1; i < life->end; ++i) {
      if (!Names(named_[i], block)) continue;
      std::optional<std::vector<PointwiseStep>> reader = ReaderSteps(i, n);
      if (i < r_.backward_begin || !reader || !OnlyReads(*reader, pool_, block, mask)) return false;
      readers.push_back(i);
    }
    if (readers.empty()) return false;
    PointwiseStep again = (*steps)[j];  // each reader's first step
    again.scratch = false;
    if (keep_mask_bits_) {
      again.kind = PointwiseStep::Kind::kKeptMask;
      again.stream.reset();
      again.kept = (*steps)[j].kept = KeptBits(n);
      ++summary_.masks_kept;
    } else {
      ++summary_.masks_redrawn;
    }
    for (size_t i : readers) {
      std::vector<PointwiseStep> chain = *ReaderSteps(i, n);
      chain.insert(chain.begin(), again);
      SetChain(r_.ops[i], std::move(chain), n);
    }
    return keep_mask_bits_;
  }

  // n bits for a kept mask, the recording's own (outside the pool, whose
  // blocks hold one step's tensors).
  uint8_t* KeptBits(int64_t n) {
    ScopedBufferPool outside_the_pool(nullptr);
    r_.kept_masks.push_back(Tensor::Empty({(n + 31) / 32}, pool_.device()));  // n bits, as floats
    return reinterpret_cast<uint8_t*>(r_.kept_masks.back().ptr());
  }

  // Operation i's steps when it is a chain over n elements or one call a
  // chain step can stand for.
  std::optional<std::vector<PointwiseStep>> ReaderSteps(size_t i, int64_t n) const {
    if (const ChainArgs* chain = ChainOf(r_.ops[i]))
      return std::get<1>(*chain) == n ? std::optional(std::get<0>(*chain)) : std::nullopt;
    std::optional<ChainStep> one = AsChainStep(r_.ops[i]);
    if (!one || one->n != n) return std::nullopt;
    return std::vector<PointwiseStep>{one->step};
  }

  // Whether no operation after chain c reads what it leaves in `out` (n
  // floats): until the tensor's block is given back, the only later
  // operation naming it (if any) is a chain that first rewrites `out`.
  bool DeadAfter(size_t c, const float* out, int64_t n) const {
    const void* block = BlockOf(pool_, out);
    const std::optional<Life> life = block ? lives_.At(block, c) : std::nullopt;
    if (!life || life->end == kStillHeld) return false;
    for (size_t i = c + 1; i < life->end; ++i)
      if (Names(named_[i], block)) return RewritesFirst(r_.ops[i], pool_, block, out, n);
    return true;
  }

  StepRecording& r_;
  const BufferPool& pool_;
  const bool keep_mask_bits_;
  Lives lives_;
  std::vector<std::vector<const void*>> named_;  // by operation; redraws and kept bits add no block
  ScratchSummary summary_;
};

}  // namespace

ScratchSummary KeepDeadOutputsInScratch(StepRecording* recording, const BufferPool& pool, bool keep_mask_bits) {
  Rewriter rewriter(recording, pool, keep_mask_bits);
  rewriter.RedrawOrKeepMasks();
  rewriter.MarkScratch();
  return rewriter.summary();
}

}  // namespace capture
}  // namespace tvlab
