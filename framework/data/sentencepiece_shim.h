#ifndef TVLAB_FRAMEWORK_DATA_SENTENCEPIECE_SHIM_H_
#define TVLAB_FRAMEWORK_DATA_SENTENCEPIECE_SHIM_H_

// The functions of libtvlab_sentencepiece.so (sentencepiece_shim.cc), the one
// place that includes SentencePiece's headers and links its libraries.
//
// Why a separate shared library, opened with dlopen(RTLD_DEEPBIND): Debian's
// libsentencepiece 0.1.97 carries its own protobuf-lite 3.14 and exports its
// symbols; linked into a process with the system protobuf 3.21 (which tvlab
// uses) its static initialisers fail protobuf's version check and abort.
// RTLD_DEEPBIND makes the library bind to its own protobuf; nothing else of
// tvlab's sees it. (Its header also defines absl::string_view as
// std::string_view, which clashes with Debian's Abseil.) The shim must not
// touch iostream globals (copy relocations of std::cout break under
// DEEPBIND): every result comes back through the pointers below.
//
// Signatures are the same in the shim and in the loader
// (sentencepiece_tokenizer.cc), which looks each name up with dlsym.

#include <string>
#include <vector>

extern "C" {

// Trains a unigram model of `vocab_size` pieces from `sentences` (see
// sentencepiece_shim.cc for the fixed options). true on success, with the
// serialized ModelProto in `model`; false with `error` set.
using TvlabSpmTrainFn = bool(const std::vector<std::string>* sentences, int vocab_size,
                             std::string* model, std::string* error);
// A processor for a serialized model, or nullptr with `error` set.
using TvlabSpmLoadFn = void*(const std::string* model, std::string* error);
using TvlabSpmFreeFn = void(void* processor);
using TvlabSpmPieceSizeFn = int(const void* processor);
// ids of `text`, and for each the byte offset in `text` where its piece ends.
using TvlabSpmEncodeFn = void(const void* processor, const std::string* text, std::vector<int>* ids,
                              std::vector<int>* ends);
using TvlabSpmDecodeFn = void(const void* processor, const std::vector<int>* ids, std::string* text);

}  // extern "C"

#endif  // TVLAB_FRAMEWORK_DATA_SENTENCEPIECE_SHIM_H_
