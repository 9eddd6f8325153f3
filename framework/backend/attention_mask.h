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
//   window:      W > 0 keeps only keys near the query (model.attention.window;
//                0 = no window). Query i sits at position p = causal_offset + i
//                in the keys' coordinates (causal_offset is 0 for an encoder).
//                Causal:        p - W < j <= p  (W keys, the query's own
//                               included: Hugging Face transformers'
//                               sliding_window_overlay, kv_idx > q_idx - W,
//                               as Mistral, Gemma 2/3 and Qwen 2 use it).
//                Bidirectional: |p - j| < W  (2W - 1 keys, centred).
//                Cross-attention has no window (the block sets it on the
//                self-attention mask only).
// A row whose keys are all hidden gets zero attention weights (Softmax).
// Keys visible to one query always form one interval [VisibleBegin,
// VisibleEnd), and both ends never decrease with i: kernels skip every key
// tile outside it, so a window costs O(T * W), not O(T * S).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tvlab {

struct AttentionMask {
  bool causal = false;
  int64_t causal_offset = 0;
  std::vector<int64_t> key_lengths;  // one per batch row, or empty
  int64_t window = 0;                // W keys around the query, 0 = all

  // True when every key is visible to every query (no bias to add).
  bool SeesEverything() const { return !causal && key_lengths.empty() && window <= 0; }
  // Keys [VisibleBegin(i), VisibleEnd(row, i, s)) are visible to query i of
  // batch row `row` out of s keys; none outside (the interval may be empty).
  int64_t VisibleBegin(int64_t i) const {
    return window > 0 ? std::max<int64_t>(causal_offset + i - window + 1, 0) : 0;
  }
  int64_t VisibleEnd(int64_t row, int64_t i, int64_t s) const {
    int64_t end = s;
    if (causal) end = std::min(end, causal_offset + i + 1);
    if (window > 0 && !causal) end = std::min(end, causal_offset + i + window);
    if (!key_lengths.empty()) end = std::min(end, key_lengths[row]);
    return std::max<int64_t>(end, 0);
  }
  bool Visible(int64_t row, int64_t i, int64_t j, int64_t s) const {
    return j >= VisibleBegin(i) && j < VisibleEnd(row, i, s);
  }
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
