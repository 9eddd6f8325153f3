#ifndef TVLAB_FRAMEWORK_DATA_TOKEN_STORE_TOKEN_STORE_H_
#define TVLAB_FRAMEWORK_DATA_TOKEN_STORE_TOKEN_STORE_H_

// Reading a token store: a directory that //experiments:prepare wrote once
// and training maps into memory (README.md beside this file has the format).
// Opening reads manifest.json and maps each split's files; it never scans
// the tokens, so open time and resident memory do not grow with the store;
// pages are read as a run touches them.
//
// Example:
//   TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store, TokenStore::Open(dir));
//   const TokenStoreSplit& train = store->split(kTrainSplit);
//   uint32_t first = train.token(0);
//
// Thread-safety: immutable after Open; every method is const.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/data/token_store/manifest.pb.h"
#include "framework/data/token_store/mapped_file.h"
#include "framework/data/tokenizer.h"

namespace tvlab {

// The format this code reads and writes (manifest.json's format_version).
constexpr int kTokenStoreFormatVersion = 1;
// manifest.json's tvlab_version.
extern const char kTvlabVersion[];
constexpr char kManifestFileName[] = "manifest.json";
constexpr char kTokenizerModelFileName[] = "tokenizer.model";
// The splits, in the manifest's order.
constexpr char kTrainSplit[] = "train";
constexpr char kValidationSplit[] = "validation";
constexpr char kTestSplit[] = "test";
const std::vector<std::string>& TokenStoreSplitNames();

// "uint16" when ids 0 .. vocab_size - 1 fit in 16 bits, else "uint32".
std::string TokenDtypeFor(int64_t vocab_size);

// The manifest entry of split `name` with its file names and zero counts.
TokenStoreSplit EmptySplitEntry(const std::string& name);

// One split's mapped files. Token i of document d is
// token(document_begin(d) + i), for i < document_begin(d + 1) - document_begin(d).
class TokenStoreSplitFiles {
 public:
  // Maps the files `entry` names in `dir` and checks their sizes against
  // the entry's counts and `token_dtype`, and the index's first and last
  // offsets. Errors name the file and what is wrong.
  static absl::StatusOr<TokenStoreSplitFiles> Open(const std::string& dir,
                                                   const TokenStoreSplit& entry,
                                                   const std::string& token_dtype, int64_t vocab_size);

  const std::string& name() const { return name_; }
  int64_t num_tokens() const { return num_tokens_; }
  int64_t num_documents() const { return num_documents_; }
  int64_t num_bytes() const { return num_bytes_; }
  // REQUIRES: 0 <= i < num_tokens().
  uint32_t token(int64_t i) const;
  // Bytes of text token i stands for. REQUIRES: 0 <= i < num_tokens().
  int token_bytes(int64_t i) const { return tokens_bytes_.data()[i]; }
  // Offset of document d's first token. REQUIRES: 0 <= d <= num_documents().
  int64_t document_begin(int64_t d) const;
  // How often id `id` occurs in the split. REQUIRES: 0 <= id < vocab size.
  int64_t count(int64_t id) const;
  // Drops the process's mapping of tokens [first, first + count) and their
  // neighbours (MappedFile::Release): for a reader done with them, so that
  // resident memory does not grow with the windows read.
  void ReleaseTokens(int64_t first, int64_t count) const;
  // The path of the tokens file, for messages.
  const std::string& tokens_path() const { return tokens_.path(); }

 private:
  std::string name_;
  int64_t num_tokens_ = 0, num_documents_ = 0, num_bytes_ = 0;
  bool wide_ = false;  // uint32 ids
  MappedFile tokens_, index_, tokens_bytes_, counts_;
};

class TokenStore {
 public:
  // Reads `dir`/manifest.json, checks it (format version, dtype against
  // vocab size, every split present) and maps every split's files. Errors
  // name the file and how to fix it (re-run prepare).
  static absl::StatusOr<std::unique_ptr<TokenStore>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const TokenStoreManifest& manifest() const { return manifest_; }
  int64_t vocab_size() const { return manifest_.vocab_size(); }
  // REQUIRES: `name` is one of TokenStoreSplitNames().
  const TokenStoreSplitFiles& split(const std::string& name) const;
  // The store's tokenizer: bytes, or its tokenizer.model (checked against
  // the manifest's sha256 and vocabulary size).
  absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer() const;

 private:
  std::string dir_;
  TokenStoreManifest manifest_;
  std::vector<TokenStoreSplitFiles> splits_;  // TokenStoreSplitNames() order
};

// manifest.json's text for `manifest` (protobuf's JSON mapping, indented).
std::string ManifestToJson(const TokenStoreManifest& manifest);
// Parses manifest.json's text; `path` names it in errors.
absl::StatusOr<TokenStoreManifest> ParseManifestJson(const std::string& json, const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TOKEN_STORE_TOKEN_STORE_H_
