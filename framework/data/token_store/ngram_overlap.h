#ifndef TVLAB_FRAMEWORK_DATA_TOKEN_STORE_NGRAM_OVERLAP_H_
#define TVLAB_FRAMEWORK_DATA_TOKEN_STORE_NGRAM_OVERLAP_H_

// Contamination between a store's splits: how many distinct token n-grams of
// one split also occur in another (GPT-3's 13-gram overlap, on the store's
// own tokens). An n-gram lies inside one document (none spans a boundary).
// n-grams are compared by a 64-bit hash of their ids; at the sizes a store
// has, a collision is improbable (and would only raise `shared`).
// Memory: a hash set of the distinct n-grams of `of`; `in` is streamed.

#include <cstdint>

#include "framework/data/token_store/manifest.pb.h"
#include "framework/data/token_store/token_store.h"

namespace tvlab {

constexpr int kOverlapNgram = 13;

// Distinct n-grams of `of` and how many of them occur in `in`.
TokenStoreOverlap MeasureNgramOverlap(const TokenStoreSplitFiles& of, const TokenStoreSplitFiles& in,
                                      int n = kOverlapNgram);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TOKEN_STORE_NGRAM_OVERLAP_H_
