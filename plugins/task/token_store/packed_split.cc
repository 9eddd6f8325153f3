#include "plugins/task/token_store/packed_split.h"

namespace tvlab {

PackedSplit::PackedSplit(const TokenStoreSplitFiles& split, std::optional<int32_t> separator)
    : split_(split), separator_(separator) {}

int64_t PackedSplit::length() const {
  return split_.num_tokens() + (separator_ ? split_.num_documents() : 0);
}

int64_t PackedSplit::StreamBegin(int64_t document) const {
  return split_.document_begin(document) + (separator_ ? document : 0);
}

int64_t PackedSplit::DocumentAt(int64_t position) const {
  // The last document whose stream begin is <= position.
  int64_t low = 0, high = split_.num_documents() - 1;
  while (low < high) {
    const int64_t middle = low + (high - low + 1) / 2;
    if (StreamBegin(middle) <= position) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

void PackedSplit::Read(int64_t begin, int64_t n, int32_t* ids) const {
  if (!separator_) {
    for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(split_.token(begin + i));
    split_.ReleaseTokens(begin, n);  // resident memory does not grow with the windows read
    return;
  }
  int64_t document = DocumentAt(begin);
  const int64_t first_token = begin - document;  // the token at `begin` or after its separator
  int64_t position = begin;
  for (int64_t i = 0; i < n; ++i, ++position) {
    // The separator of `document` sits at StreamBegin(document + 1) - 1.
    while (position >= StreamBegin(document + 1)) ++document;
    const int64_t token = position - document;  // the index of the token at `position`
    ids[i] = position == StreamBegin(document + 1) - 1 ? *separator_
                                                        : static_cast<int32_t>(split_.token(token));
  }
  // Resident memory does not grow with the windows read
  // (TokenStoreSplitFiles::ReleaseTokens).
  split_.ReleaseTokens(first_token, n);
}

void PackedSplit::ReadDocuments(int64_t begin, int64_t n, int32_t* documents) const {
  const int64_t first = DocumentAt(begin);
  int64_t document = first;
  for (int64_t i = 0; i < n; ++i) {
    while (begin + i >= StreamBegin(document + 1)) ++document;  // also past empty documents
    documents[i] = static_cast<int32_t>(document - first);
  }
}

int PackedSplit::BytesAt(int64_t position) const {
  if (!separator_) return split_.token_bytes(position);
  const int64_t document = DocumentAt(position);
  if (position == StreamBegin(document + 1) - 1) return 0;
  return split_.token_bytes(position - document);
}

}  // namespace tvlab
