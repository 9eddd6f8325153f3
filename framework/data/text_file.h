#ifndef TVLAB_FRAMEWORK_DATA_TEXT_FILE_H_
#define TVLAB_FRAMEWORK_DATA_TEXT_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace tvlab {

// The bytes of a file; errors name the spec field that gave the path.
absl::StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& field);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TEXT_FILE_H_
