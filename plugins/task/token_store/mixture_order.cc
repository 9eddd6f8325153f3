#include "plugins/task/token_store/mixture_order.h"

#include <algorithm>
#include <cmath>

#include "plugins/task/token_store/window_order.h"

namespace tvlab {
namespace {

// Keeps the block shuffle apart from the window orders keyed by the seed.
constexpr uint64_t kBlockKey = 0x6d69787475726521ull;

}  // namespace

MixtureOrder::MixtureOrder(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  double running = 0, smallest = 1;
  for (double w : weights) {
    running += w;
    cumulative_.push_back(running / total);
    smallest = std::min(smallest, w / total);
  }
  cumulative_.back() = 1.0;
  block_ = std::max<uint64_t>(kMinBlockSize, static_cast<uint64_t>(std::ceil(2.0 / smallest)));
}

uint64_t MixtureOrder::TakenBefore(int k, uint64_t blocks) const {
  if (k < 0) return 0;
  return static_cast<uint64_t>(std::floor(static_cast<double>(blocks * block_) * cumulative_[k]));
}

uint64_t MixtureOrder::SlotsEnd(int k, uint64_t b) const { return TakenBefore(k, b + 1) - TakenBefore(k, b); }

uint64_t MixtureOrder::Slot(uint64_t seed, uint64_t b, uint64_t position) const {
  return ShuffledIndex(seed ^ kBlockKey, b, block_, position);
}

int MixtureOrder::SourceOfSlot(uint64_t b, uint64_t slot) const {
  int k = 0;
  while (slot >= SlotsEnd(k, b)) ++k;  // the last source's end is M
  return k;
}

MixtureOrder::Draw MixtureOrder::At(uint64_t seed, uint64_t sample) const {
  if (num_sources() == 1) return {0, sample};
  const uint64_t b = sample / block_;
  const uint64_t slot = Slot(seed, b, sample % block_);
  const int k = SourceOfSlot(b, slot);
  const uint64_t earlier = TakenBefore(k, b) - TakenBefore(k - 1, b);
  return {k, earlier + (slot - (k == 0 ? 0 : SlotsEnd(k - 1, b)))};
}

std::vector<uint64_t> MixtureOrder::SamplesPerSource(uint64_t seed, uint64_t samples) const {
  std::vector<uint64_t> counts(num_sources());
  if (num_sources() == 1) {
    counts[0] = samples;
    return counts;
  }
  const uint64_t full = samples / block_;
  for (int k = 0; k < num_sources(); ++k) counts[k] = TakenBefore(k, full) - TakenBefore(k - 1, full);
  for (uint64_t position = 0; position < samples % block_; ++position)
    ++counts[SourceOfSlot(full, Slot(seed, full, position))];
  return counts;
}

uint64_t SourceWindowSeed(uint64_t seed, int source) {
  return seed ^ (static_cast<uint64_t>(source) * 0x9e3779b97f4a7c15ull);
}

}  // namespace tvlab
