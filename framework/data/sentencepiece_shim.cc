// libtvlab_sentencepiece.so: SentencePiece behind the plain functions of
// sentencepiece_shim.h. Loaded only by sentencepiece_tokenizer.cc, with
// RTLD_DEEPBIND (see the header for why). Includes no Abseil header.

#include "framework/data/sentencepiece_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <string>
#include <type_traits>
#include <unordered_map>

namespace {

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>* lines) : lines_(lines) {}
  bool done() const override { return i_ >= lines_->size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return (*lines_)[i_]; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  const std::vector<std::string>* lines_;
  size_t i_ = 0;
};

}  // namespace

extern "C" {

bool TvlabSpmTrain(const std::vector<std::string>* sentences, int vocab_size, std::string* model,
                   std::string* error) {
  // Deterministic and lossless: one thread, every line in order (no
  // sampling or shuffling), a fixed seed; identity normalisation, spaces
  // kept as they are and no dummy prefix, so decode(encode(text)) == text
  // for valid UTF-8; characters never seen in training (newlines included,
  // since training sees lines) fall back to their bytes.
  const std::unordered_map<std::string, std::string> options = {
      {"vocab_size", std::to_string(vocab_size)},
      {"model_type", "unigram"},
      {"num_threads", "1"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"character_coverage", "1.0"},
      {"max_sentence_length", "1000000"},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"unk_id", "0"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_id", "-1"},
      {"minloglevel", "2"},
  };
  sentencepiece::SetRandomGeneratorSeed(20240101);
  VectorIterator it(sentences);
  sentencepiece::util::Status s = sentencepiece::SentencePieceTrainer::Train(options, &it, model);
  if (!s.ok()) *error = s.error_message();
  return s.ok();
}

void* TvlabSpmLoad(const std::string* model, std::string* error) {
  auto* processor = new sentencepiece::SentencePieceProcessor();
  sentencepiece::util::Status s = processor->LoadFromSerializedProto(*model);
  if (!s.ok()) {
    *error = s.error_message();
    delete processor;
    return nullptr;
  }
  return processor;
}

void TvlabSpmFree(void* processor) { delete static_cast<sentencepiece::SentencePieceProcessor*>(processor); }

int TvlabSpmPieceSize(const void* processor) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(processor)->GetPieceSize();
}

void TvlabSpmEncode(const void* processor, const std::string* text, std::vector<int>* ids,
                    std::vector<int>* ends) {
  const auto* sp = static_cast<const sentencepiece::SentencePieceProcessor*>(processor);
  const sentencepiece::ImmutableSentencePieceText pieces = sp->EncodeAsImmutableProto(*text);
  ids->clear();
  ends->clear();
  for (const auto& piece : pieces.pieces()) {
    ids->push_back(static_cast<int>(piece.id()));
    ends->push_back(static_cast<int>(piece.end()));
  }
}

void TvlabSpmDecode(const void* processor, const std::vector<int>* ids, std::string* text) {
  *text = static_cast<const sentencepiece::SentencePieceProcessor*>(processor)->DecodeIds(*ids);
}

}  // extern "C"

// The loader looks these up by name with the types of sentencepiece_shim.h.
static_assert(std::is_same<decltype(TvlabSpmTrain), TvlabSpmTrainFn>::value, "signature");
static_assert(std::is_same<decltype(TvlabSpmLoad), TvlabSpmLoadFn>::value, "signature");
static_assert(std::is_same<decltype(TvlabSpmFree), TvlabSpmFreeFn>::value, "signature");
static_assert(std::is_same<decltype(TvlabSpmPieceSize), TvlabSpmPieceSizeFn>::value, "signature");
static_assert(std::is_same<decltype(TvlabSpmEncode), TvlabSpmEncodeFn>::value, "signature");
static_assert(std::is_same<decltype(TvlabSpmDecode), TvlabSpmDecodeFn>::value, "signature");
