#include "framework/data/token_store/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tvlab {

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a regular file"));
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(info.st_size);
  if (file.size_ > 0) {
    void* map = ::mmap(nullptr, file.size_, PROT_READ, MAP_SHARED, fd, 0);
    const int error = errno;
    if (map == MAP_FAILED) {
      ::close(fd);
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot map '", path, "' into memory: ", std::strerror(error)));
    }
    file.data_ = static_cast<const unsigned char*>(map);
    // Training reads windows at random offsets: no read-ahead around them
    // (bench/store_bench.sh: a 30-step run's RSS on a 2 GB store went from
    // 1.32x to 1.29x the 10 MB store's; the rest is large folios mapped
    // whole on a fault: Release below). The advice changes no result; a
    // kernel that refuses it only reads ahead.
    (void)::madvise(map, file.size_, MADV_RANDOM);
  }
  ::close(fd);  // the mapping stays valid
  return file;
}

void MappedFile::Release(size_t offset, size_t length) const {
  if (data_ == nullptr || length == 0 || offset >= size_) return;
  constexpr size_t kBlock = size_t{2} << 20;  // the largest folio a fault maps here
  const size_t begin = offset / kBlock * kBlock;  // page-aligned: data_ is
  const size_t end = std::min(size_, (offset + length + kBlock - 1) / kBlock * kBlock);
  // Only the process's page tables change; a kernel that refuses the advice
  // keeps the pages mapped (more resident memory, the same bytes).
  (void)::madvise(const_cast<unsigned char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tvlab
