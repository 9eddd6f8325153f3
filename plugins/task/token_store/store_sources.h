#ifndef TVLAB_PLUGINS_TASK_TOKEN_STORE_STORE_SOURCES_H_
#define TVLAB_PLUGINS_TASK_TOKEN_STORE_STORE_SOURCES_H_

// The stores a token_store task reads: options.path (one source), or
// options.sources (a weighted mixture of stores of one tokenizer). Opening
// maps every store (no token is read), checks that they share the tokenizer
// (kind, model sha256, vocabulary) and that every split is long enough for
// one window, with errors naming the option's field path
// (task.options.sources[1].path) and how to fix it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/data/token_store/token_store.h"
#include "framework/data/tokenizer.h"
#include "plugins/task/token_store/mixture_order.h"
#include "plugins/task/token_store/packed_split.h"
#include "plugins/task/token_store/token_store.pb.h"

namespace tvlab {

// One store of the task, opened.
struct StoreSource {
  std::string field;  // "task.options.path" or "task.options.sources[k].path", for messages
  std::string path;   // as the options give it
  double weight = 1;  // as the options give it (1 for options.path)
  std::unique_ptr<TokenStore> store;
  std::unique_ptr<PackedSplit> train, validation;
};

// What every view of the task shares: the sources (sources[0] is evaluated),
// their common tokenizer, the separator and the mixture's sample order.
struct OpenedStores {
  std::vector<StoreSource> sources;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<int32_t> separator;
  std::unique_ptr<MixtureOrder> order;
  int64_t store_vocab_size = 0;  // every source's; the task adds the separator
  bool mixture = false;          // options.sources (even of one store), not options.path
};

// Checks the options alone (no file is read): path or sources, not both;
// each source a path and a finite weight > 0, none below
// kSmallestMixtureShare of the weights' sum; context_length and
// store_vocab_size in range.
absl::Status ValidateStoreOptions(const TokenStoreOptions& options);

// A source may hold no less than this share of the mixture.
constexpr double kSmallestMixtureShare = 1e-6;

// Opens every source. REQUIRES: ValidateStoreOptions(options) is ok.
absl::StatusOr<std::shared_ptr<OpenedStores>> OpenStores(const TokenStoreOptions& options);

}  // namespace tvlab

#endif  // TVLAB_PLUGINS_TASK_TOKEN_STORE_STORE_SOURCES_H_
