#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_TOKENIZE_BATCH_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_TOKENIZE_BATCH_H_

// Tokenizing a batch of documents on several threads. Each result depends
// on its document alone, so the batch's result does not depend on the
// number of threads.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/data/tokenizer.h"

namespace tvlab {

struct TokenizedDocument {
  std::vector<int32_t> ids;
  std::vector<uint8_t> token_bytes;  // bytes of text each id stands for
  uint64_t split_hash = 0;           // Fnv1a64 of the text (document_split.h)
  uint64_t second_hash = 0;          // another hash; with split_hash, the duplicate key
};

// The documents' tokens and hashes, in order. Fails if a token stands for
// more than 255 bytes (a SentencePiece model with such long pieces).
absl::StatusOr<std::vector<TokenizedDocument>> TokenizeBatch(const Tokenizer& tokenizer,
                                                             const std::vector<std::string>& documents,
                                                             int threads);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_TOKENIZE_BATCH_H_
