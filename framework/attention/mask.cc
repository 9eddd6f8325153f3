#include "framework/attention/mask.h"

#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {

Tensor MaskBias(const AttentionMask& mask, int64_t batch, int64_t t, int64_t s) {
  if (mask.SeesEverything()) return Tensor();
  int64_t rows = 1;
  if (!mask.key_lengths.empty()) {
    TVLAB_CHECK_EQ(static_cast<int64_t>(mask.key_lengths.size()), batch)
        << "key_lengths needs one entry per batch row";
    for (int64_t length : mask.key_lengths)
      TVLAB_CHECK(length >= 0) << "negative key length " << length;
    rows = batch;
  }
  if (mask.has_documents()) {  // self-attention: queries and keys share the positions
    TVLAB_CHECK(mask.document_positions == s &&
                static_cast<int64_t>(mask.document_begin.size()) == batch * s)
        << "document tables of " << mask.document_positions << " positions for " << s << " keys";
    TVLAB_CHECK(mask.causal_offset >= 0 && mask.causal_offset + t <= s)
        << "queries outside the documents' positions";
    rows = batch;
  }
  Tensor bias = Tensor::Empty({rows, 1, t, s});  // (R, 1, T, S)
  CurrentBackend().AttentionMaskBias(mask, t, s, bias.ptr());
  return bias;
}

}  // namespace tvlab
