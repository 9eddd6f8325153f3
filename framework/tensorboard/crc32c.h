#ifndef TVLAB_FRAMEWORK_TENSORBOARD_CRC32C_H_
#define TVLAB_FRAMEWORK_TENSORBOARD_CRC32C_H_

// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and
// final xor 0xFFFFFFFF), the checksum of TFRecord framing. Debian has no C
// library that exports it (Abseil 20220623 predates absl/crc; leveldb and
// snappy keep theirs internal), so this is a small table-driven
// implementation, tested against the standard check value
// Crc32c("123456789") == 0xE3069283 (crc32c_test.cc).

#include <cstddef>
#include <cstdint>
#include <string>

namespace tvlab {

uint32_t Crc32c(const void* data, size_t size);
inline uint32_t Crc32c(const std::string& s) { return Crc32c(s.data(), s.size()); }

// TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a
// CRC of data that itself holds CRCs does not degenerate.
uint32_t MaskCrc32c(uint32_t crc);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TENSORBOARD_CRC32C_H_
