#include "experiments/prepare_store/tokenize_batch.h"

#include <atomic>
#include <functional>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "experiments/prepare_store/document_split.h"

namespace tvlab {
namespace {

// One document's tokens; false if a token covers more than 255 bytes.
bool Tokenize(const Tokenizer& tokenizer, const std::string& text, TokenizedDocument* out) {
  std::vector<int64_t> ends;
  out->ids = tokenizer.Encode(text, &ends);
  out->token_bytes.resize(ends.size());
  int64_t previous = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    const int64_t bytes = ends[i] - previous;
    if (bytes < 0 || bytes > 255) return false;
    out->token_bytes[i] = static_cast<uint8_t>(bytes);
    previous = ends[i];
  }
  out->split_hash = Fnv1a64(text);
  out->second_hash = std::hash<std::string_view>()(std::string_view(text));
  return true;
}

}  // namespace

absl::StatusOr<std::vector<TokenizedDocument>> TokenizeBatch(const Tokenizer& tokenizer,
                                                             const std::vector<std::string>& documents,
                                                             int threads) {
  std::vector<TokenizedDocument> results(documents.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> too_long{false};
  auto work = [&] {
    for (size_t i = next++; i < documents.size(); i = next++)
      if (!Tokenize(tokenizer, documents[i], &results[i])) too_long = true;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  if (too_long)
    return absl::InvalidArgumentError(
        "the tokenizer has a piece of more than 255 bytes, which a token store cannot record "
        "(token_bytes are one byte each); train a model with shorter pieces");
  return results;
}

}  // namespace tvlab
