#ifndef TVLAB_FRAMEWORK_ATTENTION_QUERY_CHUNKS_H_
#define TVLAB_FRAMEWORK_ATTENTION_QUERY_CHUNKS_H_

// When the unfused attention composition runs in query chunks (attend.h).
// A score that cannot take the fused kernel (the additive score's per-pair
// network) still must not hold (T, S) tensors for every layer: Attend then
// runs the composition on a chunk of queries at a time, each chunk under
// activation checkpointing (framework/autograd/checkpoint.h), so at most one
// chunk's (B, H, rows, S[, hidden]) intermediates exist at any moment and
// memory grows linearly in T and S. The result is the whole composition's,
// dropout masks included. Header-only: the memory estimate
// (framework/limits) reads the same rule.

#include <algorithm>
#include <cstdint>

namespace tvlab {

// (query, key) pairs per head in one chunk, and the fewest query rows a
// chunk has (so that very long key sequences still give GEMMs of some size).
constexpr int64_t kQueryChunkPairs = 128 * 128;
constexpr int64_t kMinQueryChunkRows = 8;

// Query rows per chunk for S keys.
inline int64_t QueryChunkRows(int64_t keys) {
  return std::max(kMinQueryChunkRows, kQueryChunkPairs / std::max<int64_t>(keys, 1));
}

// Whether T queries over S keys are split into chunks (when the policy is
// not "unfused" and the fused kernel does not run).
inline bool ChunksQueries(int64_t queries, int64_t keys) {
  return queries > QueryChunkRows(keys);
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_QUERY_CHUNKS_H_
