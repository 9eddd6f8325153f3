#include "experiments/prepare_store/document_split.h"

#include "framework/data/token_store/token_store_writer.h"

namespace tvlab {

uint64_t Fnv1a64(const std::string& bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

int SplitOfHash(uint64_t hash, const TokenStoreSplitRule& rule) {
  const double u = static_cast<double>(hash) / 18446744073709551616.0;  // 2^64
  if (u < rule.train()) return kTrainSplitIndex;
  if (u < rule.train() + rule.validation()) return kValidationSplitIndex;
  return kTestSplitIndex;
}

}  // namespace tvlab
