#include "framework/io/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace tvlab {
namespace {

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Append(absl::string_view data) override {
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "cannot write", path_);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (fdatasync(fd_) != 0) return ErrnoStatus(errno, "cannot sync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (close(fd) != 0) return ErrnoStatus(errno, "cannot close", path_);
    return absl::OkStatus();
  }

  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
};

absl::StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, int flags) {
  int fd;
  do {
    fd = open(path.c_str(), flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoStatus(errno, "cannot open for writing", path);
  return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
}

class PosixFileSystem : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Open(path, O_TRUNC);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return Open(path, O_APPEND);
  }

  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (rename(from.c_str(), to.c_str()) != 0)
      return ErrnoStatus(errno, absl::StrCat("cannot rename '", from, "' to"), to);
    return absl::OkStatus();
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus(errno, "cannot remove", path);
    return absl::OkStatus();
  }

  absl::Status RemoveAll(const std::string& path) override {
    std::error_code error;
    std::filesystem::remove_all(path, error);
    if (error) return ErrnoStatus(error.value(), "cannot remove", path);
    return absl::OkStatus();
  }

  absl::Status CreateDirs(const std::string& path) override {
    if (path.empty()) return absl::InvalidArgumentError("cannot create a directory with an empty name");
    // Each prefix in turn, so the error names the part that is in the way.
    for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
      const std::string prefix = path.substr(0, end);
      struct stat st;
      if (!prefix.empty() && stat(prefix.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
          return absl::FailedPreconditionError(absl::StrCat(
              "cannot create directory '", path, "': '", prefix,
              "' exists and is not a directory; remove it or choose another location"));
        }
      } else if (!prefix.empty() && mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoStatus(errno, absl::StrCat("cannot create directory '", path, "': cannot make"),
                           prefix);
      }
      if (end == std::string::npos) break;
    }
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& path) override {
    int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "cannot open directory", path);
    int rc = fsync(fd);
    int error = errno;
    close(fd);
    // Some filesystems cannot fsync a directory (EINVAL); there is nothing
    // more to do there.
    if (rc != 0 && error != EINVAL) return ErrnoStatus(error, "cannot sync directory", path);
    return absl::OkStatus();
  }
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static FileSystem* const fs = new PosixFileSystem();
  return fs;
}

absl::Status ErrnoStatus(int error_number, absl::string_view action, const std::string& path) {
  const std::string what = absl::StrCat(action, " '", path, "': ", std::strerror(error_number));
  switch (error_number) {
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(
          absl::StrCat(what, "; free some disk space (or choose another location) and try again"));
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(
          absl::StrCat(what, "; choose a location you can write to"));
    case ENOTDIR:
      return absl::FailedPreconditionError(
          absl::StrCat(what, "; a part of the path is a file, not a directory"));
    case EISDIR:
      return absl::FailedPreconditionError(
          absl::StrCat(what, "; a directory is in the way: remove it or choose another location"));
    case ENOENT:
      return absl::NotFoundError(absl::StrCat(what, "; check that the location exists"));
    default:
      return absl::InternalError(what);
  }
}

}  // namespace tvlab
