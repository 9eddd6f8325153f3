#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_PHILOX_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_PHILOX_CUH_

// Philox4x32-10 for CUDA kernels: the same counter-based generator as
// framework/core/rng.cc (RngStream), so a dropout mask drawn on the GPU is
// bit-identical to the CPU backends' for the same stream and element index.
//
// Every function is __host__ __device__: compiled by the host compiler (no
// CUDA needed) they run in philox_host_test.cc against RngStream on many
// counters, which is what proves the equality without a GPU. Plain C++:
// no CUDA headers, no device intrinsics except __umulhi under nvcc.
//
// Word w of a stream lives in Philox block w / 4, lane w % 4; the block's
// counter is {block lo, (block hi) ^ purpose_word, step lo, step hi} and the
// key is the seed's two halves (RngStream::Block).

#include <cstdint>

#if defined(__CUDACC__)
#define TVLAB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TVLAB_HOST_DEVICE inline
#endif

namespace tvlab {
namespace cuda {

// What a kernel needs of an RngStream (plain data, passed by value to a
// kernel). Build it on the host with MakePhiloxStream (dropout_kernel.h).
struct PhiloxStream {
  uint32_t key0, key1;   // RngStream::key()
  uint32_t purpose_word;  // RngStream::purpose_word(), xor-ed into counter word 1
  uint32_t step_lo, step_hi;
  // RngStream::word_offset(): word i of this stream is word i + word_offset
  // of the unskipped one (a data-parallel shard's part of a mask).
  uint64_t word_offset;
};

struct PhiloxBlock {
  uint32_t w[4];
};

TVLAB_HOST_DEVICE uint32_t PhiloxMulHi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// One Philox4x32-10 block (Salmon et al., SC'11), rounds as rng.cc's
// Philox4x32.
TVLAB_HOST_DEVICE PhiloxBlock Philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                            uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = PhiloxMulHi(kMul0, c0), lo0 = kMul0 * c0;
    const uint32_t hi1 = PhiloxMulHi(kMul1, c2), lo1 = kMul1 * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// The four words of block `block` of the unskipped stream (its words
// 4*block .. 4*block+3; word_offset not applied).
TVLAB_HOST_DEVICE PhiloxBlock PhiloxStreamBlock(const PhiloxStream& s, uint64_t block) {
  return Philox4x32_10(static_cast<uint32_t>(block),
                       static_cast<uint32_t>(block >> 32) ^ s.purpose_word, s.step_lo, s.step_hi,
                       s.key0, s.key1);
}

// Word `index` of the stream (RngStream::Word, word_offset applied).
TVLAB_HOST_DEVICE uint32_t PhiloxStreamWord(const PhiloxStream& s, uint64_t index) {
  index += s.word_offset;
  return PhiloxStreamBlock(s, index >> 2).w[index & 3];
}

// Words [4 * group, 4 * group + 4) of the stream (word_offset applied): one
// Philox block when the offset is a multiple of 4, else the two it spans.
TVLAB_HOST_DEVICE PhiloxBlock PhiloxStreamFourWords(const PhiloxStream& s, uint64_t group) {
  const uint64_t first = s.word_offset + 4 * group;
  const int shift = static_cast<int>(first & 3);
  const PhiloxBlock a = PhiloxStreamBlock(s, first >> 2);
  if (shift == 0) return a;
  const PhiloxBlock b = PhiloxStreamBlock(s, (first >> 2) + 1);
  PhiloxBlock out;
  for (int i = 0; i < 4; ++i) out.w[i] = shift + i < 4 ? a.w[shift + i] : b.w[shift + i - 4];
  return out;
}

// Dropout of element `e` of a mask (Backend::DropoutMask's definition):
// word e / 2 decides by its 16-bit half e % 2; dropped when that half is
// below `threshold` = round(p * 65536). Returns the inverted-dropout factor,
// 0 or keep_scale = 1 / (1 - p).
TVLAB_HOST_DEVICE float DropoutFactor(const PhiloxStream& s, uint64_t e, uint32_t threshold,
                                      float keep_scale) {
  const uint32_t half = (PhiloxStreamWord(s, e >> 1) >> ((e & 1) * 16)) & 0xFFFFu;
  return half < threshold ? 0.0f : keep_scale;
}

}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_PHILOX_CUH_
