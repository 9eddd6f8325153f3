#ifndef TVLAB_FRAMEWORK_IO_FILE_SYSTEM_H_
#define TVLAB_FRAMEWORK_IO_FILE_SYSTEM_H_

// The filesystem operations tvlab's writers use, behind an interface in the
// style of LevelDB's Env: production code uses DefaultFileSystem() (POSIX);
// tests pass a FileSystemWrapper subclass that injects failures (ENOSPC, EIO)
// or crashes at a chosen operation (framework/io/testing/).
//
// Every operation returns a Status whose message names the path, what failed
// (strerror) and what to do; nothing throws.
//
// Thread-safety: DefaultFileSystem() is safe to use from several threads; a
// WritableFile is not.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tvlab {

// A file open for writing. Writes go straight to the kernel (no user-space
// buffer), so a successful Append is visible to readers at once.
class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes the file if still open (errors lost)
  // Writes all of `data`, or fails naming the file.
  virtual absl::Status Append(absl::string_view data) = 0;
  // fsync: the data is on disk when this returns OK.
  virtual absl::Status Sync() = 0;
  // REQUIRES: called at most once; no Append or Sync after it.
  virtual absl::Status Close() = 0;
  virtual const std::string& path() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates `path` or truncates it.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Opens `path` for appending, creating it if missing.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  // rename(2): atomically replaces `to` (a file, or an empty directory when
  // `from` is one).
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Removes a file; a missing file is OK.
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // Removes a directory tree; a missing one is OK.
  virtual absl::Status RemoveAll(const std::string& path) = 0;
  // Creates `path` and its parents; OK if it already is a directory. Fails
  // (naming the path) if it or a parent is a regular file, or cannot be made.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // fsyncs a directory, so renames and new entries in it survive a crash.
  virtual absl::Status SyncDir(const std::string& path) = 0;
};

// The POSIX filesystem. Never destroyed.
FileSystem* DefaultFileSystem();

// Forwards every call to `target`; subclass it and override what a test
// needs to change.
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem* target) : target_(target) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return target_->NewWritableFile(path);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return target_->NewAppendableFile(path);
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  absl::Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  absl::Status RemoveAll(const std::string& path) override { return target_->RemoveAll(path); }
  absl::Status CreateDirs(const std::string& path) override { return target_->CreateDirs(path); }
  absl::Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }

 protected:
  FileSystem* target() const { return target_; }

 private:
  FileSystem* target_;
};

// A Status for a failed system call: `action` ("cannot write"), the path,
// strerror(error_number) and a hint (ENOSPC: free some space; EACCES/EROFS:
// choose a writable location; ENOTDIR/EEXIST: a part of the path is a file).
absl::Status ErrnoStatus(int error_number, absl::string_view action, const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_IO_FILE_SYSTEM_H_
