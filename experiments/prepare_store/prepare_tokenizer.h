#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_PREPARE_TOKENIZER_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_PREPARE_TOKENIZER_H_

// prepare's tokenizer: bytes, a given SentencePiece .model, or a model
// trained on the first --spm_sample_bytes of training documents' lines (in
// input order; documents that go to validation or test never train it).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/prepare_store/input_files.h"
#include "experiments/prepare_store/prepare.h"
#include "framework/data/token_store/manifest.pb.h"
#include "framework/data/tokenizer.h"

namespace tvlab {

struct PreparedTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  TokenStoreTokenizer entry;  // the manifest's tokenizer entry
  std::string model;          // the serialized SentencePiece model; "" for bytes
};

absl::StatusOr<PreparedTokenizer> PrepareTokenizer(const PrepareOptions& options,
                                                   const std::vector<InputFile>& inputs,
                                                   const TokenStoreSplitRule& rule);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_PREPARE_TOKENIZER_H_
