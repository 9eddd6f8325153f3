#ifndef TVLAB_FRAMEWORK_ATTENTION_MASK_H_
#define TVLAB_FRAMEWORK_ATTENTION_MASK_H_

// Masks in the attention kit. A mask is a description (AttentionMask,
// framework/backend/attention_mask.h: causal with an offset, key lengths, a
// window, documents); only the unfused attention path turns it into an
// additive table, and it does so with a backend kernel, so the table is made
// where the logits live.

#include <cstdint>

#include "framework/backend/attention_mask.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

// The additive bias of `mask` for `batch` rows, T queries and S keys:
// (R, 1, T, S) with R = batch when mask.key_lengths or documents are set,
// else 1; 0 keeps a key, -inf hides it. Undefined when mask.SeesEverything().
// REQUIRES: key_lengths empty or of size `batch`, none negative (a length
// beyond S hides nothing); documents over S positions for `batch` rows,
// with the queries at positions causal_offset .. causal_offset + T - 1 < S.
Tensor MaskBias(const AttentionMask& mask, int64_t batch, int64_t t, int64_t s);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_MASK_H_
