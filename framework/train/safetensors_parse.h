#ifndef TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_PARSE_H_
#define TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_PARSE_H_

// The checks of the safetensors reader (safetensors.h), on their own so that
// the fuzzer (framework/train/fuzz/) builds them with few dependencies
// (Tensor, Abseil, protobuf's JSON parser).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/tensor/tensor.h"

namespace tvlab {

// The same checks on a whole file already in memory; `source` names it in
// messages. This is the fuzzers' entry point.
absl::StatusOr<std::map<std::string, Tensor>> ParseSafetensors(const char* data, size_t size,
                                                               const std::string& source);

// Headers larger than this are refused before anything is allocated (the
// `safetensors` package uses the same bound).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100 << 20;

namespace safetensors_internal {

// One tensor as the header describes it, after every check.
struct Entry {
  std::string name;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

// DataLoss "<source>: not a valid safetensors file: <what>; ...".
absl::Status Bad(const std::string& source, const std::string& what);
// The little-endian u64 of the first 8 bytes.
uint64_t HeaderLength(const unsigned char* len);
// The header fits in a file of `size` bytes and under the bound.
absl::Status CheckHeaderLength(uint64_t header_len, uint64_t size, const std::string& source);
// Parses and checks the JSON header of a file with `data_size` bytes after it:
// dtypes, shapes, offsets that tile the data exactly.
absl::StatusOr<std::vector<Entry>> ParseHeader(const std::string& header, uint64_t data_size,
                                               const std::string& source);
// Refuses NaN and infinite values, naming the tensor.
absl::Status CheckFinite(const Tensor& t, const std::string& name, const std::string& source);

}  // namespace safetensors_internal
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_SAFETENSORS_PARSE_H_
