#include "framework/data/tokenizer.h"

#include "absl/strings/str_cat.h"
#include "framework/data/sentencepiece_tokenizer.h"
#include "framework/data/text_file.h"

namespace tvlab {
namespace {

class ByteTokenizer : public Tokenizer {
 public:
  int64_t vocab_size() const override { return 256; }
  std::vector<int32_t> Encode(const std::string& text, std::vector<int64_t>* ends) const override {
    // Bytes 0..255 (char is signed here: 0x80 and above must not go negative).
    std::vector<int32_t> ids;
    ids.reserve(text.size());
    for (unsigned char c : text) ids.push_back(c);
    if (ends != nullptr) {
      ends->resize(text.size());
      for (size_t i = 0; i < text.size(); ++i) (*ends)[i] = static_cast<int64_t>(i) + 1;
    }
    return ids;
  }
  std::string Decode(const std::vector<int32_t>& ids) const override {
    std::string out;
    out.reserve(ids.size());
    for (int32_t t : ids) out += static_cast<char>(t);
    return out;
  }
  std::string SerializedModel() const override { return ""; }
};


// Presence by value: the spec loader writes every default out, so an unset
// field reads as "" or 0 with its has-bit set.
bool HasModelPath(const TokenizerOptions& o) { return !o.model_path().empty(); }
bool HasVocabSize(const TokenizerOptions& o) { return o.vocab_size() != 0; }

}  // namespace

std::unique_ptr<Tokenizer> MakeByteTokenizer() { return std::make_unique<ByteTokenizer>(); }

absl::Status ValidateTokenizerOptions(const TokenizerOptions& o, const std::string& field) {
  if (o.kind() == TokenizerOptions::BYTES) {
    if (HasModelPath(o) || HasVocabSize(o))
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": model_path and vocab_size apply to kind SENTENCEPIECE only; the BYTES "
                 "tokenizer has 256 ids (set kind: SENTENCEPIECE, or remove them)"));
    return absl::OkStatus();
  }
  if (!HasModelPath(o) && !HasVocabSize(o))
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": kind SENTENCEPIECE needs model_path (a trained .model file) or vocab_size (to "
               "train one from the training split), e.g. tokenizer { kind: SENTENCEPIECE vocab_size: 1000 }"));
  // 256 byte-fallback pieces, <unk>, and something learned from the text.
  if (HasVocabSize(o) && o.vocab_size() < 260)
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".vocab_size must be at least 260 (got ", o.vocab_size(),
        "): a SentencePiece model here holds the 256 bytes (for characters it never saw), <unk> "
        "and the pieces it learns; for fewer ids use kind: BYTES"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeTokenizer(const TokenizerOptions& o,
                                                         const std::vector<std::string>& training_lines,
                                                         const std::string& field) {
  if (absl::Status s = ValidateTokenizerOptions(o, field); !s.ok()) return s;
  if (o.kind() == TokenizerOptions::BYTES) return MakeByteTokenizer();
  if (!HasModelPath(o))
    return TrainSentencePiece(training_lines, o.vocab_size(), absl::StrCat(field, ".vocab_size"));
  const std::string what = absl::StrCat(field, ".model_path: '", o.model_path(), "'");
  absl::StatusOr<std::string> bytes = ReadTextFile(o.model_path(), absl::StrCat(field, ".model_path"));
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadSentencePiece(*bytes, what);
  if (!tokenizer.ok()) return tokenizer.status();
  if (HasVocabSize(o) && (*tokenizer)->vocab_size() != o.vocab_size())
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has ", (*tokenizer)->vocab_size(), " pieces but ", field, ".vocab_size is ",
        o.vocab_size(), "; remove vocab_size or set it to ", (*tokenizer)->vocab_size()));
  return tokenizer;
}

}  // namespace tvlab
