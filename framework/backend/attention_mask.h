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
//   documents:   packed rows (several documents in one window). The tables
//                document_begin and document_end are (B, P), P =
//                document_positions: position x of row b belongs to the
//                document [document_begin[b*P + x], document_end[b*P + x]).
//                Query i sits at position p = causal_offset + i and sees
//                only keys j of p's document. Keys and queries share the
//                positions 0 .. P-1 (self-attention; P = S, checked by
//                FusedAttentionDesc), so 0 <= causal_offset + i < P.
//                SetDocuments makes the tables from one id per position
//                (a document = a maximal run of equal ids); empty = one
//                document per row. Cross-attention has no documents.
// A row whose keys are all hidden gets zero attention weights (Softmax).
// Keys visible to one query always form one interval [VisibleBegin,
// VisibleEnd), and both ends never decrease with i (a document's begin and
// end never decrease along a row): kernels skip every key tile outside it,
// so a window costs O(T * W), not O(T * S), and packed documents of length
// L cost O(T * L).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tvlab {

struct AttentionMask {
  bool causal = false;
  int64_t causal_offset = 0;
  std::vector<int64_t> key_lengths;  // one per batch row, or empty
  int64_t window = 0;                // W keys around the query, 0 = all
  int64_t document_positions = 0;    // P of the document tables, 0 = none
  std::vector<int32_t> document_begin;  // (B, P) or empty
  std::vector<int32_t> document_end;    // (B, P) or empty

  bool has_documents() const { return !document_begin.empty(); }
  // True when every key is visible to every query (no bias to add).
  bool SeesEverything() const {
    return !causal && key_lengths.empty() && window <= 0 && !has_documents();
  }
  // Keys [VisibleBegin(row, i), VisibleEnd(row, i, s)) are visible to query
  // i of batch row `row` out of s keys; none outside (the interval may be
  // empty).
  int64_t VisibleBegin(int64_t row, int64_t i) const {
    int64_t begin = window > 0 ? std::max<int64_t>(causal_offset + i - window + 1, 0) : 0;
    if (has_documents()) begin = std::max<int64_t>(begin, document_begin[DocumentIndex(row, i)]);
    return begin;
  }
  int64_t VisibleEnd(int64_t row, int64_t i, int64_t s) const {
    int64_t end = s;
    if (causal) end = std::min(end, causal_offset + i + 1);
    if (window > 0 && !causal) end = std::min(end, causal_offset + i + window);
    if (!key_lengths.empty()) end = std::min(end, key_lengths[row]);
    if (has_documents()) end = std::min<int64_t>(end, document_end[DocumentIndex(row, i)]);
    return std::max<int64_t>(end, 0);
  }
  bool Visible(int64_t row, int64_t i, int64_t j, int64_t s) const {
    return j >= VisibleBegin(row, i) && j < VisibleEnd(row, i, s);
  }
  // The tables' entry of query i of row `row` (position causal_offset + i).
  int64_t DocumentIndex(int64_t row, int64_t i) const {
    return row * document_positions + causal_offset + i;
  }
};

// Sets mask->document_* from `ids` (batch, positions), row-major: one
// document id per position, a document being a maximal run of equal ids in
// a row (so ids need not be unique across a row, only differ from their
// neighbours' documents). Empty `ids` clears the documents.
inline void SetDocuments(AttentionMask* mask, const std::vector<int32_t>& ids, int64_t batch,
                         int64_t positions) {
  mask->document_begin.clear();
  mask->document_end.clear();
  mask->document_positions = ids.empty() ? 0 : positions;
  if (ids.empty()) return;
  mask->document_begin.resize(ids.size());
  mask->document_end.resize(ids.size());
  for (int64_t r = 0; r < batch; ++r) {
    const int32_t* row = ids.data() + r * positions;
    for (int64_t x = 0; x < positions;) {  // the run [x, end) of equal ids
      int64_t end = x + 1;
      while (end < positions && row[end] == row[x]) ++end;
      for (int64_t y = x; y < end; ++y) {
        mask->document_begin[r * positions + y] = static_cast<int32_t>(x);
        mask->document_end[r * positions + y] = static_cast<int32_t>(end);
      }
      x = end;
    }
  }
}

// The documents of `mask` restated over the keys from position `first` on
// (a sliding window's cache dropped the keys before it: kv_cache.h): the
// tables keep columns [first, P) and count positions from `first`.
inline void DropDocumentPositionsBefore(AttentionMask* mask, int64_t batch, int64_t first) {
  if (!mask->has_documents() || first <= 0) return;
  const int64_t p = mask->document_positions, kept = std::max<int64_t>(p - first, 0);
  std::vector<int32_t> begin(batch * kept), end(batch * kept);
  for (int64_t r = 0; r < batch; ++r)
    for (int64_t x = 0; x < kept; ++x) {
      begin[r * kept + x] = static_cast<int32_t>(
          std::max<int64_t>(mask->document_begin[r * p + first + x] - first, 0));
      end[r * kept + x] = static_cast<int32_t>(mask->document_end[r * p + first + x] - first);
    }
  mask->document_begin = std::move(begin);
  mask->document_end = std::move(end);
  mask->document_positions = kept;
}

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
