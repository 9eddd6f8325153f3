#include "framework/data/token_store/token_store_writer.h"

#include <sys/stat.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/data/token_store/token_store.h"
#include "framework/io/atomic_file.h"

namespace tvlab {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

template <typename T>
void AppendLittleEndian(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts (token_store.cc)
  out->append(bytes, sizeof(T));
}

}  // namespace

// One split's open files, each with a buffer (WritableFile does not buffer).
struct TokenStoreWriter::SplitOutput {
  std::unique_ptr<WritableFile> tokens, index, token_bytes;
  std::string tokens_buffer, index_buffer, token_bytes_buffer;
  std::vector<int64_t> counts;

  absl::Status Flush(bool all) {
    for (auto [file, buffer] : {std::pair{tokens.get(), &tokens_buffer},
                                std::pair{index.get(), &index_buffer},
                                std::pair{token_bytes.get(), &token_bytes_buffer}}) {
      if (!all && buffer->size() < kFlushBytes) continue;
      if (absl::Status s = file->Append(*buffer); !s.ok()) return s;
      buffer->clear();
    }
    return absl::OkStatus();
  }
};

TokenStoreWriter::TokenStoreWriter(std::string path, int64_t vocab_size, FileSystem* fs)
    : path_(std::move(path)), partial_(path_ + ".partial"), vocab_size_(vocab_size), fs_(fs) {}

TokenStoreWriter::~TokenStoreWriter() {
  if (committed_) return;
  outputs_.clear();  // closes the files
  (void)fs_->RemoveAll(partial_);  // best effort: a leftover .partial is removed by the next run
}

absl::StatusOr<std::unique_ptr<TokenStoreWriter>> TokenStoreWriter::Create(const std::string& path,
                                                                           int64_t vocab_size,
                                                                           bool overwrite,
                                                                           FileSystem* fs) {
  if (absl::Status s = CheckTarget(path, overwrite); !s.ok()) return s;
  auto writer = std::unique_ptr<TokenStoreWriter>(new TokenStoreWriter(path, vocab_size, fs));
  if (absl::Status s = fs->RemoveAll(writer->partial_); !s.ok()) return s;
  if (absl::Status s = fs->CreateDirs(writer->partial_); !s.ok()) return s;
  if (absl::Status s = writer->OpenSplits(); !s.ok()) return s;
  return writer;
}

absl::Status TokenStoreWriter::CheckTarget(const std::string& path, bool overwrite) {
  if (path.empty()) return absl::InvalidArgumentError("the token store path is empty");
  const bool is_store = Exists(absl::StrCat(path, "/", kManifestFileName));
  if (is_store && !overwrite)
    return absl::AlreadyExistsError(absl::StrCat(
        "'", path, "' is a token store already; pass --overwrite to replace it, or choose another path"));
  if (!is_store && Exists(path))
    return absl::FailedPreconditionError(absl::StrCat(
        "'", path, "' exists and is not a token store (it has no ", kManifestFileName,
        "); choose another path, or remove it yourself"));
  return absl::OkStatus();
}

absl::Status TokenStoreWriter::OpenSplits() {
  for (const std::string& name : TokenStoreSplitNames()) {
    entries_.push_back(EmptySplitEntry(name));
    const TokenStoreSplit& entry = entries_.back();
    auto output = std::make_unique<SplitOutput>();
    for (auto [file, name] : {std::pair{&output->tokens, entry.tokens_file()},
                              std::pair{&output->index, entry.index_file()},
                              std::pair{&output->token_bytes, entry.token_bytes_file()}}) {
      absl::StatusOr<std::unique_ptr<WritableFile>> opened =
          fs_->NewWritableFile(absl::StrCat(partial_, "/", name));
      if (!opened.ok()) return opened.status();
      *file = *std::move(opened);
    }
    AppendLittleEndian<uint64_t>(&output->index_buffer, 0);
    output->counts.assign(vocab_size_, 0);
    outputs_.push_back(std::move(output));
  }
  return absl::OkStatus();
}

absl::Status TokenStoreWriter::AddDocument(int split, const std::vector<int32_t>& ids,
                                           const std::vector<uint8_t>& token_bytes, int64_t text_bytes) {
  if (splits_finished_) return absl::FailedPreconditionError("AddDocument after FinishSplits");
  SplitOutput& out = *outputs_[split];
  TokenStoreSplit& entry = entries_[split];
  const bool wide = TokenDtypeFor(vocab_size_) == "uint32";
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size_)
      return absl::InternalError(absl::StrCat("token id ", id, " outside the vocabulary of ", vocab_size_));
    if (wide) {
      AppendLittleEndian<uint32_t>(&out.tokens_buffer, static_cast<uint32_t>(id));
    } else {
      AppendLittleEndian<uint16_t>(&out.tokens_buffer, static_cast<uint16_t>(id));
    }
    ++out.counts[id];
  }
  out.token_bytes_buffer.append(reinterpret_cast<const char*>(token_bytes.data()), token_bytes.size());
  entry.set_tokens(entry.tokens() + static_cast<int64_t>(ids.size()));
  entry.set_documents(entry.documents() + 1);
  entry.set_bytes(entry.bytes() + text_bytes);
  AppendLittleEndian<uint64_t>(&out.index_buffer, static_cast<uint64_t>(entry.tokens()));
  return out.Flush(/*all=*/false);
}

absl::Status TokenStoreWriter::AddFile(const std::string& name, const std::string& contents) {
  return WriteFileAtomically(fs_, absl::StrCat(partial_, "/", name), contents);
}

absl::Status TokenStoreWriter::FinishSplits() {
  if (splits_finished_) return absl::OkStatus();
  for (size_t i = 0; i < outputs_.size(); ++i) {
    SplitOutput& out = *outputs_[i];
    if (absl::Status s = out.Flush(/*all=*/true); !s.ok()) return s;
    for (WritableFile* file : {out.tokens.get(), out.index.get(), out.token_bytes.get()}) {
      if (absl::Status s = file->Sync(); !s.ok()) return s;
      if (absl::Status s = file->Close(); !s.ok()) return s;
    }
    std::string counts;
    for (int64_t c : out.counts) AppendLittleEndian<uint64_t>(&counts, static_cast<uint64_t>(c));
    const std::string path = absl::StrCat(partial_, "/", entries_[i].counts_file());
    if (absl::Status s = WriteFileAtomically(fs_, path, counts); !s.ok()) return s;
  }
  splits_finished_ = true;
  return absl::OkStatus();
}

absl::Status TokenStoreWriter::Commit(TokenStoreManifest manifest) {
  if (absl::Status s = FinishSplits(); !s.ok()) return s;
  manifest.set_format_version(kTokenStoreFormatVersion);
  manifest.set_tvlab_version(kTvlabVersion);
  manifest.set_vocab_size(vocab_size_);
  manifest.set_token_dtype(TokenDtypeFor(vocab_size_));
  manifest.clear_splits();
  for (const TokenStoreSplit& entry : entries_) *manifest.add_splits() = entry;
  const std::string manifest_path = absl::StrCat(partial_, "/", kManifestFileName);
  if (absl::Status s = WriteFileAtomically(fs_, manifest_path, ManifestToJson(manifest)); !s.ok()) return s;
  // Replacing a store: the old one moves aside first (rename cannot replace
  // a non-empty directory), and is removed once the new one is in place.
  const std::string old = path_ + ".old";
  const bool replacing = Exists(path_);
  if (replacing) {
    if (absl::Status s = fs_->RemoveAll(old); !s.ok()) return s;
    if (absl::Status s = fs_->RenameFile(path_, old); !s.ok()) return s;
  }
  if (absl::Status s = fs_->RenameFile(partial_, path_); !s.ok()) {
    if (replacing) (void)fs_->RenameFile(old, path_);  // the old store back; the error below says what failed
    return s;
  }
  if (absl::Status s = fs_->SyncDir(DirectoryOf(path_)); !s.ok()) return s;
  committed_ = true;
  return replacing ? fs_->RemoveAll(old) : absl::OkStatus();
}

}  // namespace tvlab
