// cpu_onednn's PointwiseChain: the chain's steps run tile by tile (each
// tile's operands stay in L1 from one step to the next), every step with the
// loop of the kernel it stands for (elementwise_loops.h, DropoutFactors,
// kept_mask_bits.h), and a dropout mask with the multiply that reads it as
// one pass of the same arithmetic (DropoutMultiply in dropout_multiply.h,
// KeptMultiply in kept_mask_bits.h): the same bits as those kernels one
// after another.

#include <algorithm>
#include <utility>
#include <vector>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/dropout_multiply.h"
#include "framework/backend/cpu_onednn/elementwise_loops.h"
#include "framework/backend/cpu_onednn/kept_mask_bits.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/check.h"
#include "framework/core/rng.h"

namespace tvlab {
namespace {

// Elements of one PointwiseChain tile: the tile's operands of a three-step
// chain (about six 4 KiB blocks) stay in L1 from one step to the next.
constexpr int64_t kPointwiseTile = 1024;
static_assert(kPointwiseTile % 8 == 0, "a tile's kept mask bits start at a whole byte (and its draws at a word)");

// Where each of a step's pointers lies in a tile: the scratch tile `slot`
// of the thread's buffer (an earlier scratch step's out, or its own out
// when it is scratch), or memory (-1: the pointer plus the tile's first
// element).
struct StepSlots {
  int a = -1, b = -1, c = -1, out = -1;
};

// The slots of `steps`, the same for every tile: a scratch step writes its
// own tile (the j-th scratch step tile j) instead of memory, and the later
// steps that read its out read that tile, until a step writes that out
// again (to memory, or to its own tile). `slots` is the caller's, reused.
void SlotsOf(const std::vector<PointwiseStep>& steps, std::vector<StepSlots>* slots) {
  slots->assign(steps.size(), StepSlots{});
  // (out pointer, slot) of the scratch outs later steps read from tiles;
  // the thread's, reused (no allocation a call).
  thread_local std::vector<std::pair<const float*, int>> moved;  // host: a few entries
  moved.clear();
  auto slot_of = [&](const float* p) {
    for (const auto& [out, slot] : moved)
      if (p != nullptr && out == p) return slot;
    return -1;
  };
  int next_slot = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PointwiseStep& s = steps[i];
    StepSlots& t = (*slots)[i];
    t.a = slot_of(s.a), t.b = slot_of(s.b), t.c = slot_of(s.c);
    moved.erase(std::remove_if(moved.begin(), moved.end(), [&](const auto& m) { return m.first == s.out; }),
                moved.end());
    if (!s.scratch) continue;
    t.out = next_slot++;
    moved.emplace_back(s.out, t.out);
  }
}

// One step's pointers inside one tile (StepSlots resolved).
struct TileOperands {
  const float *a, *b, *c;
  float* out;
  uint8_t* kept;  // bits; tiles start at multiples of 8
};

TileOperands OperandsAtTile(const PointwiseStep& s, const StepSlots& slots, int64_t first, float* scratch) {
  auto at = [&](const float* p, int slot) -> const float* {
    if (slot >= 0) return scratch + slot * kPointwiseTile;
    return p == nullptr ? nullptr : p + first;
  };
  return TileOperands{at(s.a, slots.a), at(s.b, slots.b), at(s.c, slots.c),
                      slots.out >= 0 ? scratch + slots.out * kPointwiseTile : s.out + first,
                      s.kept == nullptr ? nullptr : s.kept + first / 8};
}

// Step `s` over one tile of `len` elements from element `first` of the
// chain, its pointers `t` already at the tile: the same loop (and so the
// same bits) as the kernel the step stands for.
void PointwiseStepTile(const PointwiseStep& s, const TileOperands& t, int64_t first, int64_t len,
                       std::vector<uint32_t>& words) {
  switch (s.kind) {
    case PointwiseStep::Kind::kBinary: return onednn::BinaryChunk(s.op, t.a, len, t.b, len, t.out, len, 0, len);
    case PointwiseStep::Kind::kRelu: return onednn::ReluRange(t.a, t.out, 0, len);
    case PointwiseStep::Kind::kReluBackward: return onednn::ReluBackwardRange(t.a, t.c, t.out, 0, len);
    case PointwiseStep::Kind::kDropoutMask:
      DropoutFactors(*s.stream, s.p, first, len, t.out, words);
      if (t.kept != nullptr) onednn::KeptBits(t.out, len, t.kept);
      return;
    case PointwiseStep::Kind::kKeptMask: return onednn::FactorsOfKeptBits(t.kept, len, DropoutKeepScale(s.p), t.out);
  }
}

// Whether step i (a dropout mask, drawn or from kept bits, into a scratch
// tile) and step i + 1 (a multiply by that tile, which no later step reads)
// run as one pass (DropoutMultiply, KeptMultiply): the factors never reach
// a tile. On an AMD EPYC Zen 4 the sort step's chain of ReLU, dropout and
// its multiply over 64k elements went from 30.8-39.1 to 25.1-27.8 us hot,
// and that of dropout, its multiply and the residual add over 32k from
// 15.4-19.2 to 12.2-15.7 (bench/README.md, "Dropout in one pass").
bool FusesWithNextMultiply(const std::vector<PointwiseStep>& steps, const std::vector<StepSlots>& slots, size_t i) {
  using Kind = PointwiseStep::Kind;
  const int mask = slots[i].out;
  if ((steps[i].kind != Kind::kDropoutMask && steps[i].kind != Kind::kKeptMask) || mask < 0 || i + 1 >= steps.size())
    return false;
  const PointwiseStep& product = steps[i + 1];
  if (product.kind != Kind::kBinary || product.op != BinaryOp::kMul) return false;
  if ((slots[i + 1].a == mask) == (slots[i + 1].b == mask)) return false;  // one operand the factors, one not
  for (size_t j = i + 2; j < steps.size(); ++j)
    if (slots[j].a == mask || slots[j].b == mask || slots[j].c == mask) return false;
  return true;
}

// FusesWithNextMultiply's pair over one tile of `len` elements from element
// `first` (even: tiles start at multiples of kPointwiseTile): the other
// operand times the mask's factors, into the multiply's out.
void DropoutMultiplyTile(const PointwiseStep& mask, int mask_slot, const PointwiseStep& product,
                         const StepSlots& product_slots, int64_t first, int64_t len, float* scratch,
                         std::vector<uint32_t>& words) {
  const TileOperands t = OperandsAtTile(product, product_slots, first, scratch);
  const float* x = product_slots.a == mask_slot ? t.b : t.a;
  const float keep_scale = DropoutKeepScale(mask.p);
  if (mask.kind == PointwiseStep::Kind::kKeptMask)
    return onednn::KeptMultiply(mask.kept + first / 8, len, keep_scale, x, t.out);
  words.resize(static_cast<size_t>((len + 1) / 2));
  mask.stream->Words(static_cast<uint64_t>(first / 2), words.size(), words.data());  // host: random words
  onednn::DropoutMultiply(words.data(), len, DropoutThreshold(mask.p), keep_scale, x, t.out,
                          mask.kept == nullptr ? nullptr : mask.kept + first / 8);
}

// A thread's PointwiseChain buffers, kept across calls (a captured step
// makes a dozen chain calls; allocating these each call put malloc and free
// at about 1% of the sort step).
struct ChainBuffers {
  std::vector<uint32_t> words;             // host: one tile's random words
  onednn::CacheLineVector<float> scratch;  // host: scratch steps' tiles
};

ChainBuffers& ThreadChainBuffers() {
  thread_local ChainBuffers buffers;
  return buffers;
}

}  // namespace

// The slots are worked out once a call, and each tile only offsets the
// pointers: copying every step into a tile's own list (its optional
// stream included) was about 1% of the sort step on an Intel Xeon.
void OnednnBackend::PointwiseChain(const std::vector<PointwiseStep>& steps, int64_t n) {
  bool draws = false;  // DropoutMask threads from a smaller size
  int64_t scratch_steps = 0;
  for (const PointwiseStep& s : steps) {
    draws = draws || s.kind == PointwiseStep::Kind::kDropoutMask;
    scratch_steps += s.scratch;
    TVLAB_CHECK(s.kind != PointwiseStep::Kind::kDropoutMask || s.stream.has_value())
        << "PointwiseChain: a dropout step without its stream";
    TVLAB_CHECK(s.kind != PointwiseStep::Kind::kKeptMask || s.kept != nullptr)
        << "PointwiseChain: a kept mask without its bits";
  }
  thread_local std::vector<StepSlots> slots;  // the calling thread's; read by the team
  SlotsOf(steps, &slots);
  const std::vector<StepSlots>& chain_slots = slots;
  thread_local std::vector<uint8_t> fuses;  // FusesWithNextMultiply per step; read by the team
  fuses.assign(steps.size(), 0);
  for (size_t i = 0; i < steps.size(); ++i) fuses[i] = FusesWithNextMultiply(steps, slots, i);
  const std::vector<uint8_t>& fused = fuses;
  const int64_t tiles = (n + kPointwiseTile - 1) / kPointwiseTile;
  const bool parallel = n >= (draws ? onednn::kParallelOptimizerElements : onednn::kParallelElements);
  onednn::ForEachIndex(parallel, tiles, [&](int64_t t) {
    ChainBuffers& b = ThreadChainBuffers();  // this thread's
    b.words.reserve(kPointwiseTile / 2);
    if (b.scratch.size() < static_cast<size_t>(scratch_steps * kPointwiseTile))
      b.scratch.resize(static_cast<size_t>(scratch_steps * kPointwiseTile));
    const int64_t begin = t * kPointwiseTile, len = std::min(n, begin + kPointwiseTile) - begin;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (fused[i]) {
        DropoutMultiplyTile(steps[i], chain_slots[i].out, steps[i + 1], chain_slots[i + 1], begin, len,
                            b.scratch.data(), b.words);
        ++i;  // the multiply: done
        continue;
      }
      PointwiseStepTile(steps[i], OperandsAtTile(steps[i], chain_slots[i], begin, b.scratch.data()), begin, len,
                        b.words);
    }
  });
}

}  // namespace tvlab
