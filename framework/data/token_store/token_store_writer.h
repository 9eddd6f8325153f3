#ifndef TVLAB_FRAMEWORK_DATA_TOKEN_STORE_TOKEN_STORE_WRITER_H_
#define TVLAB_FRAMEWORK_DATA_TOKEN_STORE_TOKEN_STORE_WRITER_H_

// Writing a token store (README.md beside this file has the format),
// atomically: everything goes into `<path>.partial/` (a stale one from a
// crashed run is removed first), manifest.json last, then the directory is
// renamed to `<path>`. A crash at any point leaves either no `<path>` or the
// previous complete one, never a half-written store under that name.
//
// Example:
//   TVLAB_ASSIGN_OR_RETURN(auto writer, TokenStoreWriter::Create(path, 256, false));
//   TVLAB_RETURN_IF_ERROR(writer->AddDocument(kTrainSplitIndex, ids, token_bytes, text_bytes));
//   TVLAB_RETURN_IF_ERROR(writer->Commit(manifest));  // sources, tokenizer, ... filled in
//
// Thread-safety: none; one thread writes.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/data/token_store/manifest.pb.h"
#include "framework/io/file_system.h"

namespace tvlab {

// Indices of TokenStoreSplitNames().
constexpr int kTrainSplitIndex = 0, kValidationSplitIndex = 1, kTestSplitIndex = 2;

class TokenStoreWriter {
 public:
  // Starts a store of ids 0 .. vocab_size - 1 at `path`. Fails if `path`
  // is a complete store and `overwrite` is false, or if `path` exists and
  // is not a token store (nothing that is not one is ever removed).
  static absl::StatusOr<std::unique_ptr<TokenStoreWriter>> Create(const std::string& path,
                                                                  int64_t vocab_size, bool overwrite,
                                                                  FileSystem* fs = DefaultFileSystem());
  // Create's checks of `path` alone, to fail before long work.
  static absl::Status CheckTarget(const std::string& path, bool overwrite);
  ~TokenStoreWriter();  // an uncommitted store's .partial directory is removed

  // Appends one document to split `split` (a k*SplitIndex): its ids, the
  // bytes of text each id stands for (same length; each 0..255), and the
  // document's bytes. REQUIRES: ids < vocab_size.
  absl::Status AddDocument(int split, const std::vector<int32_t>& ids,
                           const std::vector<uint8_t>& token_bytes, int64_t text_bytes);
  // Puts a file (the tokenizer model) into the store.
  absl::Status AddFile(const std::string& name, const std::string& contents);
  // The directory being written, `<path>.partial`.
  const std::string& partial_dir() const { return partial_; }
  // The split entries so far (counts of what was added).
  const std::vector<TokenStoreSplit>& splits() const { return entries_; }

  // Flushes, writes the counts files and syncs every split file; then they
  // are complete in partial_dir() and TokenStoreSplitFiles::Open reads them
  // (to measure n-gram overlap before Commit). No AddDocument after it.
  absl::Status FinishSplits();
  // FinishSplits if not done, then completes `manifest` (format and tvlab
  // versions, vocabulary, dtype, splits; its other fields are the caller's),
  // writes manifest.json and renames the directory to `path` (replacing the
  // old store when overwriting). REQUIRES: called once.
  absl::Status Commit(TokenStoreManifest manifest);

 private:
  struct SplitOutput;
  TokenStoreWriter(std::string path, int64_t vocab_size, FileSystem* fs);
  absl::Status OpenSplits();

  std::string path_, partial_;
  int64_t vocab_size_;
  FileSystem* fs_;
  std::vector<TokenStoreSplit> entries_;
  std::vector<std::unique_ptr<SplitOutput>> outputs_;
  bool splits_finished_ = false, committed_ = false;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TOKEN_STORE_TOKEN_STORE_WRITER_H_
