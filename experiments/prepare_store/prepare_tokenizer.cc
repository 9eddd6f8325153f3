#include "experiments/prepare_store/prepare_tokenizer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "experiments/prepare_store/document_split.h"
#include "framework/data/sentencepiece_tokenizer.h"
#include "framework/data/text_file.h"
#include "framework/data/token_store/sha256.h"
#include "framework/data/token_store/token_store.h"
#include "framework/data/token_store/token_store_writer.h"

namespace tvlab {
namespace {

// Lines of training documents, in input order, until `limit` bytes.
absl::StatusOr<std::vector<std::string>> SampleTrainingLines(const PrepareOptions& options,
                                                             const std::vector<InputFile>& inputs,
                                                             const TokenStoreSplitRule& rule,
                                                             int64_t* sampled) {
  std::vector<std::string> lines;
  *sampled = 0;
  std::string document;
  for (const InputFile& input : inputs) {
    absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
        DocumentReader::Open(input, options.unit, options.jsonl_field);
    if (!reader.ok()) return reader.status();
    for (;;) {
      absl::StatusOr<bool> more = (*reader)->Next(&document);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (SplitOfHash(Fnv1a64(document), rule) != kTrainSplitIndex) continue;
      for (absl::string_view line : absl::StrSplit(document, '\n')) {
        if (line.empty()) continue;
        lines.emplace_back(line);
        *sampled += static_cast<int64_t>(line.size());
        if (*sampled >= options.spm_sample_bytes) return lines;
      }
    }
  }
  return lines;
}

}  // namespace

absl::StatusOr<PreparedTokenizer> PrepareTokenizer(const PrepareOptions& options,
                                                   const std::vector<InputFile>& inputs,
                                                   const TokenStoreSplitRule& rule) {
  PreparedTokenizer out;
  out.entry.set_kind(options.tokenizer);
  if (options.tokenizer == "bytes") {
    out.tokenizer = MakeByteTokenizer();
    out.entry.set_sha256(Sha256Hex(""));
    return out;
  }
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer;
  if (!options.spm_model.empty()) {
    absl::StatusOr<std::string> model = ReadTextFile(options.spm_model, "--spm_model");
    if (!model.ok()) return model.status();
    tokenizer = LoadSentencePiece(*model, absl::StrCat("--spm_model '", options.spm_model, "'"));
    out.entry.set_origin(options.spm_model);
  } else {
    int64_t sampled = 0;
    absl::StatusOr<std::vector<std::string>> lines = SampleTrainingLines(options, inputs, rule, &sampled);
    if (!lines.ok()) return lines.status();
    if (options.progress)
      std::fprintf(stderr, "prepare: training a SentencePiece model of %d pieces on %.1f MB of text\n",
                   options.spm_vocab_size, sampled / 1e6);
    tokenizer = TrainSentencePiece(*lines, options.spm_vocab_size, "--spm_vocab_size");
    out.entry.set_origin("trained");
    out.entry.set_sample_bytes(sampled);
  }
  if (!tokenizer.ok()) return tokenizer.status();
  out.tokenizer = *std::move(tokenizer);
  out.model = out.tokenizer->SerializedModel();
  out.entry.set_model_file(kTokenizerModelFileName);
  out.entry.set_sha256(Sha256Hex(out.model));
  return out;
}

}  // namespace tvlab
