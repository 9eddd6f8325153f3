#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_PREPARE_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_PREPARE_H_

// //experiments:prepare's work: text in, a token store out
// (framework/data/token_store/README.md has the format). Steps:
//   1. the inputs expanded to files (input_files.h), each hashed (sha256);
//   2. the tokenizer: bytes, a given SentencePiece .model, or one trained on
//      a sample of the training split (the first sample_bytes of training
//      documents, in input order);
//   3. documents read in order (document_reader.h), in batches tokenized by
//      `threads` threads; each goes to the split its text's hash picks
//      (document_split.h); an exact copy of an earlier document, or an
//      empty one, is dropped and counted;
//   4. the 13-gram overlap of validation and test with train, and of test
//      with validation, measured on the written tokens;
//   5. manifest.json written and the store renamed into place (atomic).
// The result depends on the inputs and options only, not on `threads`.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "experiments/prepare_store/document_reader.h"

namespace tvlab {

struct PrepareOptions {
  std::vector<std::string> inputs;  // files and directories
  std::vector<std::string> dir_extensions = {"txt", "jsonl"};
  std::string output;               // the store directory
  bool overwrite = false;
  DocumentUnit unit = DocumentUnit::kFile;
  std::string jsonl_field = "text";
  // "bytes" or "sentencepiece"; sentencepiece takes spm_model (a .model
  // file) or spm_vocab_size (train one on spm_sample_bytes of text).
  std::string tokenizer = "bytes";
  std::string spm_model;
  int spm_vocab_size = 0;
  int64_t spm_sample_bytes = 20 << 20;
  double train_fraction = 0.98, validation_fraction = 0.01, test_fraction = 0.01;
  int threads = 2;
  bool progress = true;  // a progress line on stderr
};

// Checks the options alone; messages name the flag.
absl::Status ValidatePrepareOptions(const PrepareOptions& options);

// Writes the store; on failure no store is left at options.output (nor a
// .partial directory, unless the process dies).
absl::Status Prepare(const PrepareOptions& options);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_PREPARE_H_
