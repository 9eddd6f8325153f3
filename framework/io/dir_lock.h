#ifndef TVLAB_FRAMEWORK_IO_DIR_LOCK_H_
#define TVLAB_FRAMEWORK_IO_DIR_LOCK_H_

// An exclusive lock on a directory: flock(2) on `<dir>/<lock_file>`, which
// holds the owner's pid. The kernel drops the lock when the process ends in
// any way (exit, error, signal, kill -9), so a stale lock file is harmless:
// the next owner simply locks it again. Used for run directories
// (".run.lock") and grid output directories (".grid.lock").

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tvlab {

class DirLock {
 public:
  DirLock() = default;
  DirLock(DirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirLock& operator=(DirLock&& other) noexcept;
  ~DirLock();  // releases the lock

  // Locks `dir`/`lock_file` (creating the file; `dir` must exist) without
  // waiting. If another process holds it: FailedPrecondition
  // "<dir>/<lock_file> is held by process <pid>".
  static absl::StatusOr<DirLock> Acquire(const std::string& dir, const std::string& lock_file);

  bool held() const { return fd_ >= 0; }

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_IO_DIR_LOCK_H_
