#include "framework/io/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "framework/io/file_system.h"

namespace tvlab {

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DirLock::~DirLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

absl::StatusOr<DirLock> DirLock::Acquire(const std::string& dir, const std::string& lock_file) {
  const std::string path = dir + "/" + lock_file;
  int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot open the lock file", path);
  DirLock lock(fd);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return ErrnoStatus(errno, "cannot lock", path);
    char buffer[32] = {};
    ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    std::string pid = n > 0 ? std::string(absl::StripAsciiWhitespace(std::string(buffer, n))) : "";
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is held by process ", pid.empty() ? "(unknown pid)" : pid));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return ErrnoStatus(errno, "cannot write the pid into the lock file", path);
  return lock;
}

}  // namespace tvlab
