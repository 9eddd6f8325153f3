#include "framework/data/token_store/token_store.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/data/sentencepiece_tokenizer.h"
#include "framework/data/text_file.h"
#include "framework/data/token_store/sha256.h"
#include "google/protobuf/util/json_util.h"

namespace tvlab {

const char kTvlabVersion[] = "tvlab 2026.12 (token store format 1)";

const std::vector<std::string>& TokenStoreSplitNames() {
  static const auto* names = new std::vector<std::string>{kTrainSplit, kValidationSplit, kTestSplit};
  return *names;
}

std::string TokenDtypeFor(int64_t vocab_size) { return vocab_size <= 65536 ? "uint16" : "uint32"; }

TokenStoreSplit EmptySplitEntry(const std::string& name) {
  TokenStoreSplit entry;
  entry.set_name(name);
  entry.set_tokens(0);
  entry.set_documents(0);
  entry.set_bytes(0);
  entry.set_tokens_file(name + ".tokens");
  entry.set_index_file(name + ".index");
  entry.set_token_bytes_file(name + ".token_bytes");
  entry.set_counts_file(name + ".counts");
  return entry;
}

namespace {

// Little-endian loads (the store's byte order; this code runs on x86 and
// ARM little-endian hosts, where memcpy is the load).
template <typename T>
T LoadLittleEndian(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

absl::Status CheckSize(const MappedFile& file, uint64_t expected, const std::string& what) {
  if (file.size() == expected) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      "token store file '", file.path(), "' has ", file.size(), " bytes but manifest.json says ",
      what, " (", expected, " bytes): the store is damaged or incomplete; prepare it again"));
}

}  // namespace

absl::StatusOr<TokenStoreSplitFiles> TokenStoreSplitFiles::Open(const std::string& dir,
                                                                const TokenStoreSplit& entry,
                                                                const std::string& token_dtype,
                                                                int64_t vocab_size) {
  TokenStoreSplitFiles files;
  files.name_ = entry.name();
  files.num_tokens_ = entry.tokens();
  files.num_documents_ = entry.documents();
  files.num_bytes_ = entry.bytes();
  files.wide_ = token_dtype == "uint32";
  const uint64_t width = files.wide_ ? 4 : 2;
  for (auto [file, name] : {std::pair{&files.tokens_, entry.tokens_file()},
                            std::pair{&files.index_, entry.index_file()},
                            std::pair{&files.tokens_bytes_, entry.token_bytes_file()},
                            std::pair{&files.counts_, entry.counts_file()}}) {
    if (name.empty() || name.find('/') != std::string::npos)
      return absl::DataLossError(absl::StrCat("token store '", dir, "': manifest.json's split '",
                                              entry.name(), "' names no file or a path ('", name,
                                              "'); prepare the store again"));
    absl::StatusOr<MappedFile> mapped = MappedFile::Open(absl::StrCat(dir, "/", name));
    if (!mapped.ok()) return mapped.status();
    *file = std::move(mapped).value();
  }
  const std::string split = absl::StrCat("split '", entry.name(), "' has ");
  const uint64_t tokens = static_cast<uint64_t>(files.num_tokens_);
  const uint64_t documents = static_cast<uint64_t>(files.num_documents_);
  for (absl::Status s :
       {CheckSize(files.tokens_, tokens * width, absl::StrCat(split, tokens, " ", token_dtype, " tokens")),
        CheckSize(files.index_, (documents + 1) * 8, absl::StrCat(split, documents, " documents")),
        CheckSize(files.tokens_bytes_, tokens, absl::StrCat(split, tokens, " tokens")),
        CheckSize(files.counts_, static_cast<uint64_t>(vocab_size) * 8,
                  absl::StrCat("the vocabulary has ", vocab_size, " ids"))})
    if (!s.ok()) return s;
  if (files.document_begin(0) != 0 || files.document_begin(files.num_documents_) != files.num_tokens_)
    return absl::DataLossError(absl::StrCat(
        "token store file '", files.index_.path(), "' does not run from 0 to ", files.num_tokens_,
        " tokens (it runs from ", files.document_begin(0), " to ",
        files.document_begin(files.num_documents_), "): the store is damaged; prepare it again"));
  return files;
}

uint32_t TokenStoreSplitFiles::token(int64_t i) const {
  return wide_ ? LoadLittleEndian<uint32_t>(tokens_.data() + 4 * i)
               : LoadLittleEndian<uint16_t>(tokens_.data() + 2 * i);
}

void TokenStoreSplitFiles::ReleaseTokens(int64_t first, int64_t count) const {
  const size_t width = wide_ ? 4 : 2;
  tokens_.Release(static_cast<size_t>(first) * width, static_cast<size_t>(count) * width);
}

int64_t TokenStoreSplitFiles::document_begin(int64_t d) const {
  return static_cast<int64_t>(LoadLittleEndian<uint64_t>(index_.data() + 8 * d));
}

int64_t TokenStoreSplitFiles::count(int64_t id) const {
  return static_cast<int64_t>(LoadLittleEndian<uint64_t>(counts_.data() + 8 * id));
}

std::string ManifestToJson(const TokenStoreManifest& manifest) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string json;
  // Printing a message this code built cannot fail.
  (void)google::protobuf::util::MessageToJsonString(manifest, &json, options);
  return json;
}

absl::StatusOr<TokenStoreManifest> ParseManifestJson(const std::string& json, const std::string& path) {
  TokenStoreManifest manifest;
  google::protobuf::util::JsonParseOptions options;  // unknown fields are errors
  const auto status = google::protobuf::util::JsonStringToMessage(json, &manifest, options);
  if (!status.ok())
    return absl::DataLossError(absl::StrCat("token store manifest '", path, "' is not valid (",
                                            std::string(status.message()), "); prepare the store again"));
  return manifest;
}

namespace {

// The manifest's own consistency: what Open relies on before mapping files.
absl::Status CheckManifest(const TokenStoreManifest& m, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat("token store manifest '", path, "': ", what));
  };
  if (m.format_version() != kTokenStoreFormatVersion)
    return bad(absl::StrCat("format_version is ", m.format_version(), " but this tvlab reads format ",
                            kTokenStoreFormatVersion, "; prepare the store again with this tvlab"));
  if (m.vocab_size() < 1) return bad(absl::StrCat("vocab_size is ", m.vocab_size(), "; it must be >= 1"));
  if (m.token_dtype() != TokenDtypeFor(m.vocab_size()))
    return bad(absl::StrCat("token_dtype is '", m.token_dtype(), "' but a vocabulary of ",
                            m.vocab_size(), " ids is stored as ", TokenDtypeFor(m.vocab_size())));
  const std::vector<std::string>& names = TokenStoreSplitNames();
  if (m.splits_size() != static_cast<int>(names.size()))
    return bad(absl::StrCat("lists ", m.splits_size(), " splits; a store has ", names.size(),
                            " (train, validation, test)"));
  for (int i = 0; i < m.splits_size(); ++i) {
    const TokenStoreSplit& s = m.splits(i);
    if (s.name() != names[i])
      return bad(absl::StrCat("split ", i, " is '", s.name(), "'; expected '", names[i], "'"));
    if (s.tokens() < 0 || s.documents() < 0 || s.bytes() < 0)
      return bad(absl::StrCat("split '", s.name(), "' has a negative count"));
  }
  if (m.tokenizer().kind() != "bytes" && m.tokenizer().kind() != "sentencepiece")
    return bad(absl::StrCat("tokenizer.kind is '", m.tokenizer().kind(),
                            "'; expected 'bytes' or 'sentencepiece'"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Open(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kManifestFileName);
  absl::StatusOr<std::string> json = ReadTextFile(path, "token store manifest");
  if (!json.ok())
    return absl::NotFoundError(absl::StrCat(
        "'", dir, "' is not a token store (", json.status().message(),
        "); make one with //experiments:prepare, or check the path"));
  absl::StatusOr<TokenStoreManifest> manifest = ParseManifestJson(*json, path);
  if (!manifest.ok()) return manifest.status();
  if (absl::Status s = CheckManifest(*manifest, path); !s.ok()) return s;
  auto store = std::unique_ptr<TokenStore>(new TokenStore());
  store->dir_ = dir;
  store->manifest_ = *std::move(manifest);
  for (const TokenStoreSplit& entry : store->manifest_.splits()) {
    absl::StatusOr<TokenStoreSplitFiles> files = TokenStoreSplitFiles::Open(
        dir, entry, store->manifest_.token_dtype(), store->manifest_.vocab_size());
    if (!files.ok()) return files.status();
    store->splits_.push_back(*std::move(files));
  }
  return store;
}

const TokenStoreSplitFiles& TokenStore::split(const std::string& name) const {
  for (const TokenStoreSplitFiles& s : splits_)
    if (s.name() == name) return s;
  std::abort();  // REQUIRES: a name of TokenStoreSplitNames()
}

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenStore::LoadTokenizer() const {
  const TokenStoreTokenizer& t = manifest_.tokenizer();
  std::unique_ptr<Tokenizer> tokenizer;
  if (t.kind() == "bytes") {
    tokenizer = MakeByteTokenizer();
  } else {
    const std::string path = absl::StrCat(dir_, "/", t.model_file());
    absl::StatusOr<std::string> model = ReadTextFile(path, "token store tokenizer");
    if (!model.ok()) return model.status();
    if (Sha256Hex(*model) != t.sha256())
      return absl::DataLossError(absl::StrCat("token store file '", path,
                                              "' does not match manifest.json's tokenizer.sha256; "
                                              "the store is damaged; prepare it again"));
    absl::StatusOr<std::unique_ptr<Tokenizer>> loaded =
        LoadSentencePiece(*model, absl::StrCat("token store tokenizer '", path, "'"));
    if (!loaded.ok()) return loaded.status();
    tokenizer = *std::move(loaded);
  }
  if (tokenizer->vocab_size() != vocab_size())
    return absl::DataLossError(absl::StrCat("token store '", dir_, "': its tokenizer has ",
                                            tokenizer->vocab_size(), " ids but manifest.json says ",
                                            vocab_size(), "; prepare the store again"));
  return tokenizer;
}

}  // namespace tvlab
