#ifndef TVLAB_FRAMEWORK_BACKEND_PRECISION_H_
#define TVLAB_FRAMEWORK_BACKEND_PRECISION_H_

// The arithmetic of a GEMM (runtime.precision). Every tensor stays float32:
// master weights, activations, gradients, norms' statistics, softmax and the
// loss. Only a GEMM's two operands are rounded, to bfloat16 (8-bit
// significand: 7 stored bits plus the implicit one) or TF32 (11-bit
// significand: 10 stored bits), and the products are accumulated and written
// in float32 — what a bf16/TF32 tensor-core or AMX/AVX512_BF16 GEMM with fp32
// accumulation computes, up to summation order.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tvlab {

enum class Precision { kFp32, kTf32, kBf16 };

// "fp32", "tf32", "bf16": the spec's spelling.
const char* PrecisionName(Precision precision);
// The inverse of PrecisionName; nullopt for anything else.
std::optional<Precision> ParsePrecision(const std::string& name);
// Every precision, fp32 first.
std::vector<Precision> AllPrecisions();

// The upper 16 bits of `x` rounded to nearest, ties to even: the bfloat16
// with the same sign and exponent range. Infinities stay infinite; a NaN
// stays a (quiet) NaN, never rounds to infinity; subnormals round in their
// significand like any other value; a finite value past bf16's largest
// rounds to infinity, as IEEE rounding does.
inline uint16_t Bf16Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// The float32 whose upper 16 bits are `bits` (exact).
inline float Bf16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

// x rounded to bfloat16 and back: the value a bf16 GEMM multiplies.
inline float RoundToBf16(float x) { return Bf16ToFloat(Bf16Bits(x)); }

// x rounded to TF32 (float32 with the low 13 significand bits cleared),
// nearest, ties to even, with the same treatment of NaN, infinity and
// subnormals as RoundToBf16.
inline float RoundToTf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    u |= 0x00400000u;  // quiet NaN
  } else {
    u += 0xfffu + ((u >> 13) & 1u);
  }
  u &= 0xffffe000u;
  float y;
  std::memcpy(&y, &u, sizeof(y));
  return y;
}

// RoundToBf16, RoundToTf32 or the identity.
inline float RoundTo(Precision precision, float x) {
  switch (precision) {
    case Precision::kBf16: return RoundToBf16(x);
    case Precision::kTf32: return RoundToTf32(x);
    case Precision::kFp32: break;
  }
  return x;
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_PRECISION_H_
