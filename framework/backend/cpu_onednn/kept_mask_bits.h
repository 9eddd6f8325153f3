#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_KEPT_MASK_BITS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_KEPT_MASK_BITS_H_

// A dropout mask kept as one bit an element between a forward chain and
// the backward chains that read it (PointwiseStep::kDropoutMask's `kept`,
// kKeptMask; step capture's chain_scratch.h), on AVX-512 CPUs one compare
// mask a vector.

#include <cstdint>

namespace tvlab {
namespace onednn {

// Bit i % 8 of kept[i / 8] = 1 where factors[i] keeps element i (a factor
// of 1 / (1 - p), never 0 for p < 1), else 0; the last byte's unused bits
// are 0.
void KeptBits(const float* factors, int64_t n, uint8_t* kept);

// factors[i] = bit i of kept ? keep_scale : 0: the factors KeptBits saw,
// bit for bit, given keep_scale computed as DropoutFactors computes it.
void FactorsOfKeptBits(const uint8_t* kept, int64_t n, float keep_scale, float* factors);

// out[i] = x[i] * (bit i of kept ? keep_scale : 0) for i < n:
// FactorsOfKeptBits, then Binary's multiply, in one pass (a captured
// chain's backward dropout: onednn_pointwise_chain.cc). The same bits: the
// same factor, and x times it is one IEEE multiply either way. out may be
// x.
void KeptMultiply(const uint8_t* kept, int64_t n, float keep_scale, const float* x, float* out);

// The kernels the three choose between (AVX-512 where CpuHasAvx512f(),
// else AVX2 where CpuHasAvx2(), else portable), exposed for
// kept_mask_bits_test, which runs each one the CPU can.
namespace kept_bits_internal {
void KeptBitsPortable(const float* factors, int64_t n, uint8_t* kept);
void KeptBitsAvx2(const float* factors, int64_t n, uint8_t* kept);
void KeptBitsAvx512(const float* factors, int64_t n, uint8_t* kept);
void FactorsOfKeptBitsPortable(const uint8_t* kept, int64_t n, float keep_scale, float* factors);
void FactorsOfKeptBitsAvx2(const uint8_t* kept, int64_t n, float keep_scale, float* factors);
void FactorsOfKeptBitsAvx512(const uint8_t* kept, int64_t n, float keep_scale, float* factors);
void KeptMultiplyPortable(const uint8_t* kept, int64_t n, float keep_scale, const float* x, float* out);
void KeptMultiplyAvx2(const uint8_t* kept, int64_t n, float keep_scale, const float* x, float* out);
void KeptMultiplyAvx512(const uint8_t* kept, int64_t n, float keep_scale, const float* x, float* out);
}  // namespace kept_bits_internal

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_KEPT_MASK_BITS_H_
