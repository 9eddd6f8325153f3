#include "framework/data/heldout_split.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tvlab {

uint64_t ContentHash(const int32_t* tokens, size_t count) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  for (size_t i = 0; i < count; ++i) {
    const uint32_t v = static_cast<uint32_t>(tokens[i]);
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (v >> (8 * byte)) & 0xffu;
      h *= 0x100000001b3ull;  // FNV prime
    }
  }
  h ^= count;
  // splitmix64 finaliser: spreads FNV's weak high bits.
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

void SplitDrawsExhausted(const std::string& task, bool heldout) {
  std::fprintf(stderr,
               "internal error: task %s drew %d inputs without finding one of the %s split; its "
               "validation should have refused an input space this small\n",
               task.c_str(), kMaxSplitDraws, heldout ? "held-out" : "training");
  std::abort();
}

absl::Status CheckSplittable(double distinct, const std::string& what, const std::string& path) {
  if (distinct >= kMinDistinctInputs) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: the task has only %.0f distinct inputs (%s), too few to hold 1 in %d out for "
      "evaluation disjoint from training (need at least %.0f); use longer sequences or more digits",
      path, distinct, what, static_cast<int>(kHeldOutShare), kMinDistinctInputs));
}

}  // namespace tvlab
