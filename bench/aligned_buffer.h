#ifndef TVLAB_BENCH_ALIGNED_BUFFER_H_
#define TVLAB_BENCH_ALIGNED_BUFFER_H_

// A benchmark's operand: n floats filled with `value`, 64-byte aligned as
// tvlab's host allocator makes them (framework/tensor/device_memory.cc).
// oneDNN's transposed kernel is slower on 64-byte aligned operands than on
// malloc's 16-byte offsets for some shapes (256 x 1024 x 4096: 32-35
// against 52 GFLOP/s on one thread), so benchmarks measure what training
// sees.

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace tvlab {
namespace bench {

struct AlignedBuffer {
  explicit AlignedBuffer(int64_t n, float value = 0.0f)
      : data(static_cast<float*>(std::aligned_alloc(64, ((n * 4 + 63) / 64) * 64))) {
    std::fill(data, data + n, value);
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  float* data;
};

}  // namespace bench
}  // namespace tvlab

#endif  // TVLAB_BENCH_ALIGNED_BUFFER_H_
