#ifndef TVLAB_FRAMEWORK_DATA_TEXT_FILE_H_
#define TVLAB_FRAMEWORK_DATA_TEXT_FILE_H_

// Files read whole into memory as text: the tasks' data files (text_lm,
// parallel_text), tokenizer models, and spec and grid files
// (framework/spec/text_format_errors.h). One check for all of them, so
// none reads a device (/dev/zero never ends), blocks on a FIFO or fills
// memory with a huge file.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tvlab {

// The largest file read whole as text.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{64} << 20;  // 64 MiB

// OK when `path` is a regular file of at most kMaxTextFileBytes, checked by
// stat(2) without opening it (opening a FIFO would block). Otherwise
// NotFound when it cannot be stat'ed ("<what>: cannot read '<path>':
// <reason>"), or InvalidArgument reading
// "<what> '<path>' is not a regular text file: it is a directory" (a
// character device, a FIFO, ...) or "... has N bytes, more than ...".
absl::Status CheckTextFile(const std::string& path, const std::string& what);

// The bytes of a file that passes CheckTextFile; errors name the spec field
// that gave the path (`field`, e.g. "task.options.path").
absl::StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& field);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TEXT_FILE_H_
