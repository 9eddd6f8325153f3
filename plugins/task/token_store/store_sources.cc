#include "plugins/task/token_store/store_sources.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tvlab {
namespace {

absl::Status Prefixed(const std::string& field, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(field, ": ", s.message()));
}

std::string Describe(const TokenStore& store) {
  const TokenStoreTokenizer& t = store.manifest().tokenizer();
  return absl::StrCat(t.kind(), ", ", store.vocab_size(), " ids, model sha256 ", t.sha256().substr(0, 12));
}

// Source k of the options, as the task reads it.
StoreSource Unopened(const TokenStoreOptions& o, int k) {
  StoreSource s;
  if (o.sources_size() == 0) {
    s.field = "task.options.path";
    s.path = o.path();
  } else {
    s.field = absl::StrCat("task.options.sources[", k, "].path");
    s.path = o.sources(k).path();
    s.weight = o.sources(k).weight();
  }
  return s;
}

absl::Status ValidateSources(const TokenStoreOptions& o) {
  double total = 0;
  for (int k = 0; k < o.sources_size(); ++k) {
    const TokenStoreOptions::Source& s = o.sources(k);
    const std::string field = absl::StrCat("task.options.sources[", k, "]");
    if (s.path().empty())
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".path is required: a token store directory made by //experiments:prepare"));
    if (!s.has_weight() || !std::isfinite(s.weight()) || s.weight() <= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".weight must be a finite number > 0 (got ", s.has_weight() ? absl::StrCat(s.weight()) : "none",
          "): the source's share of training samples is its weight over the weights' sum"));
    total += s.weight();
  }
  for (int k = 0; k < o.sources_size(); ++k)
    if (o.sources(k).weight() < kSmallestMixtureShare * total)
      return absl::InvalidArgumentError(absl::StrCat(
          "task.options.sources[", k, "].weight is ", o.sources(k).weight() / total,
          " of the weights' sum, below the smallest share a source may have (", kSmallestMixtureShare,
          "); raise it or leave the source out"));
  return absl::OkStatus();
}

// Opens source k, checks its vocabulary and (for k > 0) that it shares
// the tokenizer of source 0.
absl::Status OpenSource(const TokenStoreOptions& o, int k, OpenedStores* opened) {
  StoreSource s = Unopened(o, k);
  absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Open(s.path);
  if (!store.ok()) return Prefixed(s.field, store.status());
  s.store = *std::move(store);
  const int64_t vocab = s.store->vocab_size();
  if (o.store_vocab_size() > 0 && o.store_vocab_size() != vocab)
    return absl::InvalidArgumentError(absl::StrCat(
        "task.options.store_vocab_size is ", o.store_vocab_size(), " but the store '", s.path, "' (", s.field,
        ") has ", vocab, " ids (its tokenizer: ", s.store->manifest().tokenizer().kind(),
        "); use a store prepared with the intended tokenizer, or fix store_vocab_size"));
  if (k == 0) {
    opened->store_vocab_size = vocab;
    if (o.separator() == TokenStoreOptions::END_OF_DOCUMENT) opened->separator = static_cast<int32_t>(vocab);
  } else {
    const TokenStore& first = *opened->sources[0].store;
    const TokenStoreTokenizer &a = first.manifest().tokenizer(), &b = s.store->manifest().tokenizer();
    if (a.kind() != b.kind() || a.sha256() != b.sha256() || vocab != first.vocab_size())
      return absl::InvalidArgumentError(absl::StrCat(
          s.field, ": the store '", s.path, "' has another tokenizer (", Describe(*s.store),
          ") than task.options.sources[0] '", opened->sources[0].path, "' (", Describe(first),
          "); the sources of a mixture share one tokenizer: prepare them with the same --tokenizer "
          "(and --spm_model FIRST_STORE/tokenizer.model for SentencePiece)"));
  }
  s.train = std::make_unique<PackedSplit>(s.store->split(kTrainSplit), opened->separator);
  s.validation = std::make_unique<PackedSplit>(s.store->split(kValidationSplit), opened->separator);
  const int64_t window = o.context_length() + 1;
  std::vector<const PackedSplit*> needed = {s.train.get()};
  if (k == 0) needed.push_back(s.validation.get());  // the evaluated source
  for (const PackedSplit* split : needed)
    if (split->length() < window)
      return absl::InvalidArgumentError(absl::StrCat(
          s.field, ": the ", split->split().name(), " split of token store '", s.path, "' has ", split->length(),
          " ids (documents and separators), too few for one window of ", window,
          "; lower task.options.context_length or prepare a larger corpus (or a larger ",
          "--validation_fraction)"));
  opened->sources.push_back(std::move(s));
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateStoreOptions(const TokenStoreOptions& o) {
  if (o.path().empty() && o.sources_size() == 0)
    return absl::InvalidArgumentError(
        "task.options.path is required: a token store directory made by //experiments:prepare (or "
        "task.options.sources, a mixture of stores with weights)");
  if (!o.path().empty() && o.sources_size() > 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "task.options.path ('", o.path(), "') and task.options.sources (", o.sources_size(),
        " stores) are both set: set path for one store, or list it among sources"));
  if (o.context_length() < 2)
    return absl::InvalidArgumentError(
        absl::StrCat("task.options.context_length must be >= 2 (got ", o.context_length(), ")"));
  if (o.store_vocab_size() < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "task.options.store_vocab_size must be > 0, or unset (got ", o.store_vocab_size(), ")"));
  return ValidateSources(o);
}

absl::StatusOr<std::shared_ptr<OpenedStores>> OpenStores(const TokenStoreOptions& o) {
  auto opened = std::make_shared<OpenedStores>();
  opened->mixture = o.sources_size() > 0;
  std::vector<double> weights;
  for (int k = 0; k < std::max(1, o.sources_size()); ++k) {
    absl::Status status = OpenSource(o, k, opened.get());
    if (!status.ok()) return status;
    weights.push_back(opened->sources.back().weight);
  }
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = opened->sources[0].store->LoadTokenizer();
  if (!tokenizer.ok()) return Prefixed(opened->sources[0].field, tokenizer.status());
  opened->tokenizer = *std::move(tokenizer);
  opened->order = std::make_unique<MixtureOrder>(weights);
  return opened;
}

}  // namespace tvlab
