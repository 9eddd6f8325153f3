#ifndef TVLAB_FRAMEWORK_BACKEND_ATTENTION_MASK_H_
#define TVLAB_FRAMEWORK_BACKEND_ATTENTION_MASK_H_

// AttentionMask: which keys each query may see, as a description rather than
// a materialised (B, 1, T, S) table. The unfused attention path turns it into
// an additive bias with Backend::AttentionMaskBias; a fused attention kernel
// consumes the description directly. It lives with the backend because the
// backend is the lowest layer that reads it; the plugin contracts
// (framework/interfaces) and the attention kit (framework/attention) pass it
// on unchanged.
//
// For T queries and S keys (row b of the batch):
//   causal:      query i sits at absolute position causal_offset + i and
//                sees keys j <= causal_offset + i (keys are at positions
//                0 .. S-1). With a KV cache, causal_offset = tokens cached.
//   key_lengths: keys j >= key_lengths[b] are hidden (padding at the end);
//                empty = every key of every row is real.
// A row whose keys are all hidden gets zero attention weights (Softmax).

#include <cstdint>
#include <vector>

namespace tvlab {

struct AttentionMask {
  bool causal = false;
  int64_t causal_offset = 0;
  std::vector<int64_t> key_lengths;  // one per batch row, or empty

  // True when every key is visible to every query (no bias to add).
  bool SeesEverything() const { return !causal && key_lengths.empty(); }
};

// Convenience constructors for the common cases.
inline AttentionMask CausalMask(int64_t offset) {
  AttentionMask m;
  m.causal = true;
  m.causal_offset = offset;
  return m;
}
inline AttentionMask KeyPaddingMask(std::vector<int64_t> key_lengths) {
  AttentionMask m;
  m.key_lengths = std::move(key_lengths);
  return m;
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_ATTENTION_MASK_H_
