#ifndef TVLAB_BENCH_ALIGNED_BUFFER_H_
#define TVLAB_BENCH_ALIGNED_BUFFER_H_

// A benchmark's operand: n floats filled with `value`, from tvlab's own
// host allocator, so laid out as training's tensors are: 64-byte aligned,
// and from 2 MiB up on a 2 MiB boundary, advised as transparent huge pages
// (framework/tensor/device_memory.h, kHugePage). Alignment changes GEMM speed: oneDNN's
// transposed kernel ran 256 x 1024 x 4096 at 32-35 GFLOP/s on 64-byte
// aligned operands and 52 on malloc's 16-byte offsets, and huge pages made
// the GPT step 5% faster; benchmarks measure what training sees.

#include <algorithm>
#include <cstdint>

#include "framework/tensor/device_memory.h"

namespace tvlab {
namespace bench {

struct AlignedBuffer {
  explicit AlignedBuffer(int64_t n, float value = 0.0f)
      : data(static_cast<float*>(AllocatorFor(Device::kCpu).Allocate(static_cast<size_t>(n) * 4, &rounded))) {
    std::fill(data, data + n, value);
  }
  ~AlignedBuffer() { AllocatorFor(Device::kCpu).Release(data, rounded); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  size_t rounded = 0;
  float* data;
};

}  // namespace bench
}  // namespace tvlab

#endif  // TVLAB_BENCH_ALIGNED_BUFFER_H_
