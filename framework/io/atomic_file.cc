#include "framework/io/atomic_file.h"

#include <utility>

#include "framework/core/status_macros.h"

namespace tvlab {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::StatusOr<AtomicFile> AtomicFile::Open(FileSystem* fs, std::string path) {
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(path + ".tmp"));
  return AtomicFile(fs, std::move(path), std::move(file));
}

AtomicFile::AtomicFile(FileSystem* fs, std::string path, std::unique_ptr<WritableFile> file)
    : fs_(fs), path_(std::move(path)), file_(std::move(file)) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : fs_(other.fs_), path_(std::move(other.path_)), file_(std::move(other.file_)), done_(other.done_) {
  other.done_ = true;
}

AtomicFile::~AtomicFile() {
  if (done_) return;
  file_.reset();                           // closes it
  fs_->RemoveFile(TempPath()).IgnoreError();  // best effort: the target is untouched anyway
}

absl::Status AtomicFile::Append(absl::string_view data) { return file_->Append(data); }

absl::Status AtomicFile::Commit() {
  TVLAB_RETURN_IF_ERROR(file_->Sync());
  absl::Status closed = file_->Close();
  file_.reset();
  TVLAB_RETURN_IF_ERROR(closed);
  TVLAB_RETURN_IF_ERROR(fs_->RenameFile(TempPath(), path_));
  done_ = true;
  return fs_->SyncDir(DirectoryOf(path_));
}

absl::Status WriteFileAtomically(FileSystem* fs, const std::string& path, absl::string_view contents) {
  TVLAB_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Open(fs, path));
  TVLAB_RETURN_IF_ERROR(file.Append(contents));
  return file.Commit();
}

}  // namespace tvlab
