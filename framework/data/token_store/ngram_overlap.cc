#include "framework/data/token_store/ngram_overlap.h"

#include <functional>

#include "absl/container/flat_hash_set.h"

namespace tvlab {
namespace {

// A finaliser (splitmix64's) over the rolling polynomial hash, so that
// similar n-grams spread over the table.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Calls `visit(hash)` for every n-gram inside a document of `split`:
// h = sum_k (id_k + 1) * P^(n-1-k) mod 2^64, rolled one token at a time.
void ForEachNgram(const TokenStoreSplitFiles& split, int n, const std::function<void(uint64_t)>& visit) {
  constexpr uint64_t kBase = 0x100000001b3ull;  // odd
  uint64_t top = 1;                              // P^(n-1)
  for (int k = 1; k < n; ++k) top *= kBase;
  for (int64_t d = 0; d < split.num_documents(); ++d) {
    const int64_t begin = split.document_begin(d), end = split.document_begin(d + 1);
    if (end - begin < n) continue;
    uint64_t h = 0;
    for (int64_t i = begin; i < end; ++i) {
      if (i - begin >= n) h -= (uint64_t{split.token(i - n)} + 1) * top;
      h = h * kBase + uint64_t{split.token(i)} + 1;
      if (i - begin >= n - 1) visit(Mix(h));
    }
  }
}

}  // namespace

TokenStoreOverlap MeasureNgramOverlap(const TokenStoreSplitFiles& of, const TokenStoreSplitFiles& in,
                                      int n) {
  absl::flat_hash_set<uint64_t> of_ngrams, shared;
  ForEachNgram(of, n, [&](uint64_t h) { of_ngrams.insert(h); });
  if (!of_ngrams.empty())
    ForEachNgram(in, n, [&](uint64_t h) {
      if (of_ngrams.contains(h)) shared.insert(h);
    });
  TokenStoreOverlap overlap;
  overlap.set_n(n);
  overlap.set_of_split(of.name());
  overlap.set_in_split(in.name());
  overlap.set_of_distinct(static_cast<int64_t>(of_ngrams.size()));
  overlap.set_shared(static_cast<int64_t>(shared.size()));
  overlap.set_fraction(of_ngrams.empty() ? 0.0
                                         : static_cast<double>(shared.size()) / of_ngrams.size());
  return overlap;
}

}  // namespace tvlab
