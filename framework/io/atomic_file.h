#ifndef TVLAB_FRAMEWORK_IO_ATOMIC_FILE_H_
#define TVLAB_FRAMEWORK_IO_ATOMIC_FILE_H_

// The one way tvlab writes a whole file: into `<path>.tmp` in the same
// directory, every write and the close checked, fsync, rename over `path`,
// fsync of the directory. Readers see the old file or the complete new one,
// never a part, even after a crash or a full disk.
//
// Example:
//   TVLAB_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Open(fs, path));
//   TVLAB_RETURN_IF_ERROR(file.Append(header));
//   TVLAB_RETURN_IF_ERROR(file.Append(data));
//   TVLAB_RETURN_IF_ERROR(file.Commit());
// An AtomicFile destroyed without a successful Commit removes its temporary
// file and leaves `path` as it was.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/io/file_system.h"

namespace tvlab {

class AtomicFile {
 public:
  // Opens `<path>.tmp` for writing. `fs` must outlive the AtomicFile.
  static absl::StatusOr<AtomicFile> Open(FileSystem* fs, std::string path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  ~AtomicFile();

  absl::Status Append(absl::string_view data);
  // Syncs and closes the temporary file, renames it over the target and
  // syncs the directory. On failure the target is unchanged (the temporary
  // file is removed). REQUIRES: called at most once.
  absl::Status Commit();

 private:
  AtomicFile(FileSystem* fs, std::string path, std::unique_ptr<WritableFile> file);
  std::string TempPath() const { return path_ + ".tmp"; }

  FileSystem* fs_;
  std::string path_;
  std::unique_ptr<WritableFile> file_;
  bool done_ = false;  // committed, or moved from
};

// Open + one Append + Commit.
absl::Status WriteFileAtomically(FileSystem* fs, const std::string& path, absl::string_view contents);
inline absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  return WriteFileAtomically(DefaultFileSystem(), path, contents);
}

// The directory part of `path` ("." when it has none).
std::string DirectoryOf(const std::string& path);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_IO_ATOMIC_FILE_H_
