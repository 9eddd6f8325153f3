#ifndef TVLAB_PLUGINS_TASK_TOKEN_STORE_PACKED_SPLIT_H_
#define TVLAB_PLUGINS_TASK_TOKEN_STORE_PACKED_SPLIT_H_

// A store split as one stream of ids: its documents in order, each followed
// by the separator id when there is one (packing). Reads go straight to the
// mapped files; finding the document at a position is a binary search over
// the index, so nothing is built when the stream is made.
//
// Positions: with a separator, document d occupies [begin(d) + d,
// begin(d + 1) + d) and its separator sits at begin(d + 1) + d, so
// length() = tokens + documents.

#include <cstdint>
#include <optional>

#include "framework/data/token_store/token_store.h"

namespace tvlab {

class PackedSplit {
 public:
  // `separator`: the id put after each document, or none.
  PackedSplit(const TokenStoreSplitFiles& split, std::optional<int32_t> separator);

  int64_t length() const;
  // ids[0 .. n) = stream[begin .. begin + n). REQUIRES: begin + n <= length().
  void Read(int64_t begin, int64_t n, int32_t* ids) const;
  // documents[0 .. n): the document of each of stream[begin .. begin + n),
  // counted from the one holding `begin` (0, 1, ...; a separator belongs to
  // the document it ends). REQUIRES: begin + n <= length().
  void ReadDocuments(int64_t begin, int64_t n, int32_t* documents) const;
  // Bytes of text the id at `position` stands for (0 for a separator).
  int BytesAt(int64_t position) const;
  const TokenStoreSplitFiles& split() const { return split_; }

 private:
  // The document holding stream position `position` (its separator counts
  // as part of it), and where in the stream that document starts.
  int64_t DocumentAt(int64_t position) const;
  int64_t StreamBegin(int64_t document) const;

  const TokenStoreSplitFiles& split_;
  std::optional<int32_t> separator_;
};

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_TASK_TOKEN_STORE_PACKED_SPLIT_H_
