#include "framework/data/text_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tvlab {
namespace {

// What a file that is not a regular one is, for messages.
const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

absl::Status CheckTextFile(const std::string& path, const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat(what, ": cannot read '", path, "': ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not a regular text file: it is ",
                                                   FileKind(st.st_mode), "; give a file of text"));
  if (static_cast<uint64_t>(st.st_size) > kMaxTextFileBytes)
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", path, "' has ", st.st_size, " bytes, more than the ", kMaxTextFileBytes >> 20,
        " MiB a text file read whole may have; use a smaller file"));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& field) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is required: the text file to use"));
  if (absl::Status checked = CheckTextFile(path, field); !checked.ok()) return checked;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(field, ": cannot read '", path, "': ", std::strerror(errno)));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tvlab
