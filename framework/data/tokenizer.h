#ifndef TVLAB_FRAMEWORK_DATA_TOKENIZER_H_
#define TVLAB_FRAMEWORK_DATA_TOKENIZER_H_

// Text <-> token ids for the text tasks (text_lm, parallel_text), chosen by
// their `tokenizer` option (tokenizer.proto):
//   bytes          one id per UTF-8 byte, 0..255 (the default)
//   sentencepiece  a SentencePiece unigram model, loaded from a .model file
//                  or trained from the task's training split
// Ids are 0..vocab_size()-1; a task may shift them past its own special
// tokens. Thread-safety: a Tokenizer is immutable; all methods are const.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/data/tokenizer.pb.h"

namespace tvlab {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual int64_t vocab_size() const = 0;
  // The ids of `text`; if `ends` is given, for each id the byte offset in
  // `text` where the text it stands for ends (non-decreasing; the last one is
  // text.size()), so the bytes a span of ids covers are ends[j] - ends[i].
  virtual std::vector<int32_t> Encode(const std::string& text,
                                      std::vector<int64_t>* ends = nullptr) const = 0;
  // Decode(Encode(text)) == text for valid UTF-8 (and, for bytes, any text).
  virtual std::string Decode(const std::vector<int32_t>& ids) const = 0;
  // The serialized model a run directory keeps as tokenizer.model so that
  // generation and evaluation use this very tokenizer; "" for bytes.
  virtual std::string SerializedModel() const = 0;
};

std::unique_ptr<Tokenizer> MakeByteTokenizer();

// The tokenizer `options` describe. `training_lines` (the task's training
// split, one entry per line) are used only to train a SentencePiece model
// when options give vocab_size without model_path. `field` is the options'
// spec path for messages ("task.options.tokenizer"). Errors name the field
// or file and say how to fix it: a missing or corrupt .model, a vocab_size
// the text cannot support, a model whose size differs from vocab_size.
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeTokenizer(const TokenizerOptions& options,
                                                         const std::vector<std::string>& training_lines,
                                                         const std::string& field);

// Checks the options alone (no file IO), for a task's Validate.
absl::Status ValidateTokenizerOptions(const TokenizerOptions& options, const std::string& field);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TOKENIZER_H_
