#ifndef TVLAB_EXPERIMENTS_PREPARE_STORE_DOCUMENT_SPLIT_H_
#define TVLAB_EXPERIMENTS_PREPARE_STORE_DOCUMENT_SPLIT_H_

// Which split a document goes to, from its text alone (so appending sources
// never moves a document): u = fnv1a64(text) / 2^64; train when
// u < train, validation when u < train + validation, else test. The rule is
// recorded in the manifest (split_rule) and reproducible in a few lines of
// Python (token_store_check.py).

#include <cstdint>
#include <string>

#include "framework/data/token_store/manifest.pb.h"

namespace tvlab {

// FNV-1a, 64 bits.
uint64_t Fnv1a64(const std::string& bytes);

// The split index (kTrainSplitIndex, ...) of a document whose hash is `hash`.
int SplitOfHash(uint64_t hash, const TokenStoreSplitRule& rule);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_PREPARE_STORE_DOCUMENT_SPLIT_H_
