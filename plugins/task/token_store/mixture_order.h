#ifndef TVLAB_PLUGINS_TASK_TOKEN_STORE_MIXTURE_ORDER_H_
#define TVLAB_PLUGINS_TASK_TOKEN_STORE_MIXTURE_ORDER_H_

// Which source of a weighted mixture each training sample reads, and its
// rank among that source's samples (the rank then picks the source's window
// through window_order.h). A pure function of (seed, sample), O(sources)
// per sample, no state: a resumed run and the ranks of a data-parallel run
// read what one uninterrupted process reads.
//
// Samples come in blocks of M (block_size()). Of the first b blocks,
// sources 0 .. k take floor(b M C_k) samples (C_k the weights' cumulative
// share, C_last = 1), so after b blocks every source has its share of the
// samples to within one: source k's realised proportion is within 1 / (b M)
// of its weight's share. Within block b, its M positions are shuffled (a
// Feistel permutation keyed by the seed and b) onto slots, and source k owns
// slots [g_(k-1), g_k), g_k = floor((b+1) M C_k) - floor(b M C_k); M is at
// least 2 / (smallest share), so every source owns at least one slot of
// every block. A sample's rank in its source is the source's samples in
// earlier blocks plus its slot's place in the source's slots: the ranks of
// each source's samples are 0, 1, 2, ... in blocks (shuffled inside a block).
//
// One source (weights of size 1) is the identity: sample s is rank s.

#include <cstdint>
#include <vector>

namespace tvlab {

class MixtureOrder {
 public:
  // Where a sample goes.
  struct Draw {
    int source = 0;
    uint64_t rank = 0;  // among that source's samples, from 0
  };

  // Blocks are at least this many samples.
  static constexpr uint64_t kMinBlockSize = 1024;

  // REQUIRES: weights non-empty, each finite and > 0.
  explicit MixtureOrder(const std::vector<double>& weights);

  Draw At(uint64_t seed, uint64_t sample) const;
  // How many of samples 0 .. samples - 1 each source takes (sums to
  // `samples`).
  std::vector<uint64_t> SamplesPerSource(uint64_t seed, uint64_t samples) const;

  int num_sources() const { return static_cast<int>(cumulative_.size()); }
  uint64_t block_size() const { return block_; }

 private:
  // Samples that sources 0 .. k take in blocks 0 .. blocks - 1 (0 for k < 0).
  uint64_t TakenBefore(int k, uint64_t blocks) const;
  // The end of source k's slots in block b (g_k above).
  uint64_t SlotsEnd(int k, uint64_t b) const;
  // The slot of position `position` of block b.
  uint64_t Slot(uint64_t seed, uint64_t b, uint64_t position) const;
  // The source owning slot `slot` of block b.
  int SourceOfSlot(uint64_t b, uint64_t slot) const;

  std::vector<double> cumulative_;  // C_k; the last is exactly 1
  uint64_t block_ = kMinBlockSize;  // M
};

// The key of source k's window order: the seed itself for source 0 (one
// store reads as it always did), another per source so that a store listed
// twice is read in two orders.
uint64_t SourceWindowSeed(uint64_t seed, int source);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_TASK_TOKEN_STORE_MIXTURE_ORDER_H_
