#include "experiments/prepare_store/prepare.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "experiments/prepare_store/document_split.h"
#include "experiments/prepare_store/input_files.h"
#include "experiments/prepare_store/prepare_tokenizer.h"
#include "experiments/prepare_store/progress_line.h"
#include "experiments/prepare_store/tokenize_batch.h"
#include "framework/data/token_store/ngram_overlap.h"
#include "framework/data/token_store/sha256.h"
#include "framework/data/token_store/token_store.h"
#include "framework/data/token_store/token_store_writer.h"

namespace tvlab {
namespace {

constexpr int64_t kBatchBytes = 8 << 20;
constexpr size_t kBatchDocuments = 8192;

// The state of the pass that reads, tokenizes and writes every document.
struct DocumentPass {
  const PrepareOptions& options;
  const Tokenizer& tokenizer;
  const TokenStoreSplitRule& rule;
  TokenStoreWriter& writer;
  TokenStoreDedup dedup;
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> seen;  // duplicate keys of kept documents

  absl::Status WriteBatch(const std::vector<std::string>& documents) {
    absl::StatusOr<std::vector<TokenizedDocument>> batch =
        TokenizeBatch(tokenizer, documents, options.threads);
    if (!batch.ok()) return batch.status();
    for (size_t i = 0; i < documents.size(); ++i) {
      const TokenizedDocument& doc = (*batch)[i];
      dedup.set_documents_read(dedup.documents_read() + 1);
      if (documents[i].empty()) {
        dedup.set_empty_removed(dedup.empty_removed() + 1);
        continue;
      }
      if (!seen.insert({doc.split_hash, doc.second_hash}).second) {
        dedup.set_duplicates_removed(dedup.duplicates_removed() + 1);
        continue;
      }
      const int split = SplitOfHash(doc.split_hash, rule);
      const int64_t bytes = static_cast<int64_t>(documents[i].size());
      if (absl::Status s = writer.AddDocument(split, doc.ids, doc.token_bytes, bytes); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Run(const std::vector<InputFile>& inputs, int64_t total_bytes) {
    dedup.set_documents_read(0);
    dedup.set_empty_removed(0);
    dedup.set_duplicates_removed(0);
    ProgressLine progress("prepare", total_bytes, options.progress);
    int64_t done_before = 0;
    std::vector<std::string> documents;
    int64_t batch_bytes = 0;
    for (size_t f = 0; f < inputs.size(); ++f) {
      absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
          DocumentReader::Open(inputs[f], options.unit, options.jsonl_field);
      if (!reader.ok()) return reader.status();
      for (std::string document;;) {
        absl::StatusOr<bool> more = (*reader)->Next(&document);
        if (!more.ok()) return more.status();
        if (!*more) break;
        batch_bytes += static_cast<int64_t>(document.size());
        documents.push_back(std::move(document));
        if (batch_bytes < kBatchBytes && documents.size() < kBatchDocuments) continue;
        if (absl::Status s = WriteBatch(documents); !s.ok()) return s;
        documents.clear();
        batch_bytes = 0;
        progress.Update(done_before + (*reader)->disk_bytes_read(),
                        absl::StrCat("file ", f + 1, " of ", inputs.size()));
      }
      done_before += inputs[f].bytes;
    }
    if (absl::Status s = WriteBatch(documents); !s.ok()) return s;
    progress.Finish(absl::StrCat(inputs.size(), " files, ", dedup.documents_read(), " documents"));
    return absl::OkStatus();
  }
};

// Validation and test against train, and test against validation.
absl::StatusOr<std::vector<TokenStoreOverlap>> MeasureOverlaps(const TokenStoreWriter& writer,
                                                               const std::string& dtype, int64_t vocab) {
  std::vector<TokenStoreSplitFiles> splits;
  for (const TokenStoreSplit& entry : writer.splits()) {
    absl::StatusOr<TokenStoreSplitFiles> files =
        TokenStoreSplitFiles::Open(writer.partial_dir(), entry, dtype, vocab);
    if (!files.ok()) return files.status();
    splits.push_back(*std::move(files));
  }
  return std::vector<TokenStoreOverlap>{
      MeasureNgramOverlap(splits[kValidationSplitIndex], splits[kTrainSplitIndex]),
      MeasureNgramOverlap(splits[kTestSplitIndex], splits[kTrainSplitIndex]),
      MeasureNgramOverlap(splits[kTestSplitIndex], splits[kValidationSplitIndex])};
}

absl::StatusOr<std::vector<TokenStoreSource>> DescribeSources(const std::vector<InputFile>& inputs) {
  std::vector<TokenStoreSource> sources;
  for (const InputFile& input : inputs) {
    absl::StatusOr<std::string> digest = Sha256OfFile(input.path);
    if (!digest.ok()) return digest.status();
    TokenStoreSource source;
    source.set_path(input.path);
    source.set_bytes(input.bytes);
    source.set_sha256(*digest);
    sources.push_back(source);
  }
  return sources;
}

bool AllJsonl(const std::vector<InputFile>& inputs) {
  for (const InputFile& input : inputs)
    if (!input.jsonl) return false;
  return true;
}

void PrintSummary(const TokenStoreManifest& m, const std::string& path) {
  std::printf("token store %s: %lld ids (%s), %s documents\n", path.c_str(),
              static_cast<long long>(m.vocab_size()), m.token_dtype().c_str(), m.document_unit().c_str());
  for (const TokenStoreSplit& s : m.splits())
    std::printf("  %-10s %12lld tokens %10lld documents %12lld bytes\n", s.name().c_str(),
                static_cast<long long>(s.tokens()), static_cast<long long>(s.documents()),
                static_cast<long long>(s.bytes()));
  std::printf("  read %lld documents; removed %lld empty and %lld exact duplicates\n",
              static_cast<long long>(m.dedup().documents_read()),
              static_cast<long long>(m.dedup().empty_removed()),
              static_cast<long long>(m.dedup().duplicates_removed()));
  for (const TokenStoreOverlap& o : m.overlaps())
    std::printf("  %d-grams of %s also in %s: %lld of %lld (%.4f%%)\n", o.n(), o.of_split().c_str(),
                o.in_split().c_str(), static_cast<long long>(o.shared()),
                static_cast<long long>(o.of_distinct()), 100 * o.fraction());
}

}  // namespace

absl::Status ValidatePrepareOptions(const PrepareOptions& o) {
  auto bad = [](const std::string& message) { return absl::InvalidArgumentError(message); };
  if (o.output.empty()) return bad("--output is required: the token store directory to write");
  if (o.tokenizer != "bytes" && o.tokenizer != "sentencepiece")
    return bad(absl::StrCat("--tokenizer must be bytes or sentencepiece (got '", o.tokenizer, "')"));
  if (o.tokenizer == "bytes" && (!o.spm_model.empty() || o.spm_vocab_size != 0))
    return bad("--spm_model and --spm_vocab_size apply to --tokenizer=sentencepiece only");
  if (o.tokenizer == "sentencepiece" && o.spm_model.empty() == (o.spm_vocab_size == 0))
    return bad("--tokenizer=sentencepiece takes either --spm_model (a .model file) or "
               "--spm_vocab_size (train a model of that many pieces), not both or neither");
  if (o.tokenizer == "sentencepiece" && o.spm_model.empty() && o.spm_vocab_size < 260)
    return bad(absl::StrCat("--spm_vocab_size must be at least 260 (got ", o.spm_vocab_size,
                            "): 256 byte pieces, <unk> and what it learns"));
  if (o.spm_sample_bytes <= 0) return bad("--spm_sample_bytes must be > 0");
  for (auto [value, flag] : {std::pair{o.train_fraction, "--train_fraction"},
                             std::pair{o.validation_fraction, "--validation_fraction"},
                             std::pair{o.test_fraction, "--test_fraction"}})
    if (!(value >= 0 && value <= 1)) return bad(absl::StrCat(flag, " must be in [0, 1] (got ", value, ")"));
  const double sum = o.train_fraction + o.validation_fraction + o.test_fraction;
  if (std::abs(sum - 1.0) > 1e-9 || o.train_fraction == 0)
    return bad(absl::StrCat("--train_fraction, --validation_fraction and --test_fraction must add up "
                            "to 1 with train > 0 (they add up to ", sum, ")"));
  if (o.threads < 1 || o.threads > 256) return bad(absl::StrCat("--threads must be in [1, 256] (got ", o.threads, ")"));
  return absl::OkStatus();
}

absl::Status Prepare(const PrepareOptions& options) {
  if (absl::Status s = ValidatePrepareOptions(options); !s.ok()) return s;
  if (absl::Status s = TokenStoreWriter::CheckTarget(options.output, options.overwrite); !s.ok()) return s;
  absl::StatusOr<std::vector<InputFile>> inputs = ExpandInputs(options.inputs, options.dir_extensions);
  if (!inputs.ok()) return inputs.status();
  TokenStoreManifest manifest;
  absl::StatusOr<std::vector<TokenStoreSource>> sources = DescribeSources(*inputs);
  if (!sources.ok()) return sources.status();
  int64_t total_bytes = 0;
  for (const TokenStoreSource& source : *sources) {
    *manifest.add_sources() = source;
    total_bytes += source.bytes();
  }
  TokenStoreSplitRule& rule = *manifest.mutable_split_rule();
  rule.set_hash("fnv1a64");
  rule.set_train(options.train_fraction);
  rule.set_validation(options.validation_fraction);
  rule.set_test(options.test_fraction);
  absl::StatusOr<PreparedTokenizer> tokenizer = PrepareTokenizer(options, *inputs, rule);
  if (!tokenizer.ok()) return tokenizer.status();
  *manifest.mutable_tokenizer() = tokenizer->entry;
  manifest.set_document_unit(options.unit == DocumentUnit::kFile ? "file" : "paragraph");
  for (const InputFile& input : *inputs)
    if (input.jsonl) manifest.set_document_unit(absl::StrCat(manifest.document_unit(), "; record"));
  if (absl::EndsWith(manifest.document_unit(), "; record") && AllJsonl(*inputs))
    manifest.set_document_unit("record");
  const int64_t vocab = tokenizer->tokenizer->vocab_size();
  absl::StatusOr<std::unique_ptr<TokenStoreWriter>> writer =
      TokenStoreWriter::Create(options.output, vocab, options.overwrite);
  if (!writer.ok()) return writer.status();
  DocumentPass pass{options, *tokenizer->tokenizer, rule, **writer, {}, {}};
  if (absl::Status s = pass.Run(*inputs, total_bytes); !s.ok()) return s;
  *manifest.mutable_dedup() = pass.dedup;
  if (!tokenizer->model.empty())
    if (absl::Status s = (*writer)->AddFile(kTokenizerModelFileName, tokenizer->model); !s.ok()) return s;
  if (absl::Status s = (*writer)->FinishSplits(); !s.ok()) return s;
  absl::StatusOr<std::vector<TokenStoreOverlap>> overlaps =
      MeasureOverlaps(**writer, TokenDtypeFor(vocab), vocab);
  if (!overlaps.ok()) return overlaps.status();
  for (const TokenStoreOverlap& overlap : *overlaps) *manifest.add_overlaps() = overlap;
  if (absl::Status s = (*writer)->Commit(manifest); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<TokenStore>> written = TokenStore::Open(options.output);
  if (!written.ok()) return written.status();
  PrintSummary((*written)->manifest(), options.output);
  return absl::OkStatus();
}

}  // namespace tvlab
