#ifndef TVLAB_FRAMEWORK_DATA_HELDOUT_SPLIT_H_
#define TVLAB_FRAMEWORK_DATA_HELDOUT_SPLIT_H_

// Held out by content. The synthetic tasks (sort_digits, classify_max, copy,
// reverse, sort, addition) draw training and evaluation examples from the
// same distribution; short inputs used to occur in both (about 30% of
// reverse, 35% of copy and 58% of addition evaluation examples). Instead,
// each possible input belongs to exactly one split, fixed by a hash of its
// tokens: 1 in kHeldOutShare inputs is held out. Training draws reject
// held-out inputs and evaluation draws reject training inputs, so a
// training example can never equal an evaluation example, for any seeds.
// The hash does not depend on the seed: every run of a grid is evaluated on
// inputs from the same held-out part of the space.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tvlab {

// 1 in kHeldOutShare of all inputs is held out.
inline constexpr uint64_t kHeldOutShare = 8;
// Fewer distinct inputs than this cannot be split usefully (a held-out part
// of a dozen inputs or fewer); validation refuses such options.
inline constexpr double kMinDistinctInputs = 100;
// Draws tried before giving up on finding an input of the wanted split; with
// at least kMinDistinctInputs inputs this is never reached in practice
// (each draw lands in the held-out split with probability about 1/8).
inline constexpr int kMaxSplitDraws = 4096;

// A fixed 64-bit hash of token ids (FNV-1a over the 4 bytes of each id,
// finished with a splitmix64 mix); the same on every machine.
uint64_t ContentHash(const int32_t* tokens, size_t count);
inline uint64_t ContentHash(const std::vector<int32_t>& tokens) {
  return ContentHash(tokens.data(), tokens.size());
}

// Whether the input `tokens` belongs to the held-out split.
inline bool IsHeldOut(const int32_t* tokens, size_t count) {
  return (ContentHash(tokens, count) >> 32) % kHeldOutShare == 0;
}
inline bool IsHeldOut(const std::vector<int32_t>& tokens) {
  return IsHeldOut(tokens.data(), tokens.size());
}

// Random-number word offset of draw `attempt` of one example: draw 0 uses
// the example's own words (what the task drew before the split existed),
// later draws words far beyond any example's.
inline uint64_t SplitDrawOffset(int attempt) { return static_cast<uint64_t>(attempt) << 40; }

// Programmer invariant: stops the process with a message naming `task` when
// kMaxSplitDraws draws found no input of the wanted split (validation keeps
// the input space large enough for this never to happen).
[[noreturn]] void SplitDrawsExhausted(const std::string& task, bool heldout);

// An error naming `path` when an input space of `distinct` inputs is too
// small to be split into training and held-out inputs; `what` describes the
// space (e.g. "10^1 digit strings").
absl::Status CheckSplittable(double distinct, const std::string& what, const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_HELDOUT_SPLIT_H_
