#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_DROPOUT_MULTIPLY_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_DROPOUT_MULTIPLY_H_

// Dropout in one pass: a PointwiseChain's dropout factors and the multiply
// that reads them, fused (onednn_pointwise_chain.cc; its backward twin,
// from kept bits, is KeptMultiply in kept_mask_bits.h). It gives the bits
// of the two steps in turn: the factor is DropoutFactors', and x times it
// is one IEEE multiply either way (x times the factor equals the factor
// times x: only x can be a NaN).

#include <cstdint>

namespace tvlab {
namespace onednn {

// out[i] = x[i] * factor_i for i < n, factor_i = 0 where element i's draw
// (the low 16 bits of words[i / 2] for even i, the high 16 for odd i) is
// below threshold, else keep_scale: DropoutFactors' factors of elements
// [first, first + n) for an even first, words the stream's words from
// first / 2, threshold DropoutThreshold(p) and keep_scale
// DropoutKeepScale(p). Where kept is not null, bit i % 8 of kept[i / 8] =
// factor_i != 0 (KeptBits' bits, the last byte's unused bits 0). out may
// be x.
void DropoutMultiply(const uint32_t* words, int64_t n, uint32_t threshold, float keep_scale, const float* x, float* out,
                     uint8_t* kept);

// The kernels it chooses between (AVX-512 where CpuHasAvx512f(), else
// AVX2 where CpuHasAvx2(), else portable), exposed for
// dropout_multiply_test, which runs each one the CPU can.
namespace dropout_multiply_internal {
void DropoutMultiplyPortable(const uint32_t* words, int64_t n, uint32_t threshold, float keep_scale, const float* x,
                             float* out, uint8_t* kept);
void DropoutMultiplyAvx2(const uint32_t* words, int64_t n, uint32_t threshold, float keep_scale, const float* x,
                         float* out, uint8_t* kept);
void DropoutMultiplyAvx512(const uint32_t* words, int64_t n, uint32_t threshold, float keep_scale, const float* x,
                           float* out, uint8_t* kept);
}  // namespace dropout_multiply_internal

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_DROPOUT_MULTIPLY_H_
