#ifndef TVLAB_FRAMEWORK_DATA_TOKEN_STORE_MAPPED_FILE_H_
#define TVLAB_FRAMEWORK_DATA_TOKEN_STORE_MAPPED_FILE_H_

// A read-only memory map of a whole file: the token store's token and index
// files are read through it, so opening a store costs the same whatever its
// size, and only the pages a run touches become resident (advised
// MADV_RANDOM: no read-ahead around a window), until a reader releases
// them (Release).
// Thread-safety: immutable after Open; reads from any thread.

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace tvlab {

class MappedFile {
 public:
  // Maps `path` (an empty file maps to size() 0). Errors name the file.
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops this process's mapping of the pages of bytes [offset, offset +
  // length), widened to whole 2 MiB blocks of the file (MADV_DONTNEED): they
  // leave the process's resident memory, the page cache keeps them, and a
  // later read maps them again (same bytes). Why: a kernel that caches a
  // file in large folios (Linux 6.18 on ext4 here) maps a whole folio on
  // one fault, so a 514-byte window read at random kept about 256 KB
  // resident per window (measured: bench/README.md). Safe with concurrent
  // readers (they fault the pages back in).
  void Release(size_t offset, size_t length) const;

 private:
  void Unmap();

  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_DATA_TOKEN_STORE_MAPPED_FILE_H_
