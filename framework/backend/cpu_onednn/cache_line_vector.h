#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_CACHE_LINE_VECTOR_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_CACHE_LINE_VECTOR_H_

// A std::vector whose data starts on a cache line (64 bytes), for the
// scratch buffers that kernels keep across calls and read with AVX-512
// loads. malloc aligns to 16 bytes only, so three of every four 64-byte
// loads of a std::vector<float> span two cache lines. On an Intel Xeon,
// MediumGemm's transposed weight in a plain std::vector made the sort
// model's forward products 512 x 64 x 64 take 27-29 us a call against
// 23-24 us from a 64-byte aligned buffer (bench/README.md, "Kernel scratch
// on a cache line").

#include <cstddef>
#include <new>
#include <vector>

namespace tvlab {
namespace onednn {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlignment); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const CacheLineAllocator<U>&) const { return false; }
};

template <typename T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_CACHE_LINE_VECTOR_H_
