#include "experiments/prepare_store/input_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tvlab {
namespace {

InputFile Describe(const std::string& path, int64_t bytes) {
  InputFile file;
  file.path = path;
  file.bytes = bytes;
  file.gzip = absl::EndsWith(path, ".gz");
  const std::string name = file.gzip ? path.substr(0, path.size() - 3) : path;
  file.jsonl = absl::EndsWith(name, ".jsonl");
  return file;
}

bool Wanted(const std::string& path, const std::vector<std::string>& extensions) {
  const std::string name = absl::EndsWith(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  for (const std::string& ext : extensions)
    if (absl::EndsWith(name, absl::StrCat(".", ext))) return true;
  return false;
}

// Regular files under `dir` (recursively) whose names are wanted.
absl::Status Walk(const std::string& dir, const std::vector<std::string>& extensions,
                  std::vector<InputFile>* out) {
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr)
    return absl::NotFoundError(absl::StrCat("input '", dir, "': cannot list: ", std::strerror(errno)));
  std::vector<std::string> entries;
  while (const dirent* entry = ::readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") entries.push_back(absl::StrCat(dir, "/", name));
  }
  ::closedir(handle);
  std::sort(entries.begin(), entries.end());
  for (const std::string& path : entries) {
    struct stat info;
    if (::stat(path.c_str(), &info) != 0)
      return absl::NotFoundError(absl::StrCat("input '", path, "': ", std::strerror(errno)));
    if (S_ISDIR(info.st_mode)) {
      if (absl::Status s = Walk(path, extensions, out); !s.ok()) return s;
    } else if (S_ISREG(info.st_mode) && Wanted(path, extensions)) {
      out->push_back(Describe(path, info.st_size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<InputFile>> ExpandInputs(const std::vector<std::string>& arguments,
                                                    const std::vector<std::string>& dir_extensions) {
  if (arguments.empty())
    return absl::InvalidArgumentError("--input: give at least one text or JSON Lines file or directory");
  std::vector<InputFile> files;
  for (const std::string& argument : arguments) {
    struct stat info;
    if (::stat(argument.c_str(), &info) != 0)
      return absl::NotFoundError(absl::StrCat("--input '", argument, "': ", std::strerror(errno)));
    if (S_ISREG(info.st_mode)) {
      files.push_back(Describe(argument, info.st_size));
      continue;
    }
    if (!S_ISDIR(info.st_mode))
      return absl::InvalidArgumentError(absl::StrCat(
          "--input '", argument, "' is neither a regular file nor a directory (a device or a "
          "FIFO has no end); give text or JSON Lines files, or directories of them"));
    const size_t before = files.size();
    if (absl::Status s = Walk(argument, dir_extensions, &files); !s.ok()) return s;
    if (files.size() == before)
      return absl::InvalidArgumentError(absl::StrCat(
          "--input '", argument, "' holds no file ending in .", absl::StrJoin(dir_extensions, ", ."),
          " (optionally .gz); name the files so, or set --dir_extensions"));
  }
  return files;
}

}  // namespace tvlab
