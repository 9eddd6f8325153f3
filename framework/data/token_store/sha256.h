#ifndef TVLAB_FRAMEWORK_DATA_TOKEN_STORE_SHA256_H_
#define TVLAB_FRAMEWORK_DATA_TOKEN_STORE_SHA256_H_

// SHA-256 (FIPS 180-4), for the token store's manifest: the sources' and the
// tokenizer model's digests, which `sha256sum` reproduces. Not for secrets
// (no constant-time guarantees are needed here).

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tvlab {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  // The digest of everything updated so far, as 64 lowercase hex digits.
  // REQUIRES: called once; no Update after it.
  std::string HexDigest();

 private:
  void Compress(const uint8_t* block);  // one 64-byte block

  uint32_t state_[8];
  uint8_t block_[64];
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string Sha256Hex(const std::string& bytes);

// The digest of a file's bytes, read in chunks; errors name the file.
absl::StatusOr<std::string> Sha256OfFile(const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TOKEN_STORE_SHA256_H_
