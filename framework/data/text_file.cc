#include "framework/data/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tvlab {

absl::StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& field) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is required: the text file to use"));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(field, ": cannot read '", path, "': ", std::strerror(errno)));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tvlab
