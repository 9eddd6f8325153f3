#ifndef TVLAB_FRAMEWORK_DATA_SENTENCEPIECE_TOKENIZER_H_
#define TVLAB_FRAMEWORK_DATA_SENTENCEPIECE_TOKENIZER_H_

// The SentencePiece implementation of Tokenizer (tokenizer.h). The library is
// reached through libtvlab_sentencepiece.so (sentencepiece_shim.h explains
// why), found beside the running binary's runfiles or at
// $TVLAB_SENTENCEPIECE_SHIM. Under AddressSanitizer builds it is not
// available (ASan refuses RTLD_DEEPBIND): every call returns Unimplemented.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/data/tokenizer.h"

namespace tvlab {

// False in AddressSanitizer builds, where every function below returns
// Unimplemented (tests that walk every shipped config skip the SentencePiece
// ones there, saying so).
bool SentencePieceAvailable();

// From a serialized ModelProto (a .model file's bytes). `what` names the
// source in errors ("task.options.tokenizer.model_path: 'x.model'").
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePiece(const std::string& serialized,
                                                             const std::string& what);

// Trains a unigram model of `vocab_size` pieces from `lines`; deterministic
// (sentencepiece_shim.cc lists the options).
absl::StatusOr<std::unique_ptr<Tokenizer>> TrainSentencePiece(const std::vector<std::string>& lines,
                                                              int vocab_size, const std::string& what);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_SENTENCEPIECE_TOKENIZER_H_
