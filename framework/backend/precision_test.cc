// The bf16 and TF32 rounding of GEMM operands (precision.h) on hand-made bit
// patterns, and the reference GEMM's use of it: the oracle of every other
// backend's bf16/tf32 GEMM.

#include "framework/backend/precision.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/backend/reference/reference_backend.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}
uint32_t ToBits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}
uint16_t Bf16(uint32_t bits) { return Bf16Bits(FromBits(bits)); }
uint32_t Tf32(uint32_t bits) { return ToBits(RoundToTf32(FromBits(bits))); }

TEST(Bf16Rounding, NearestTiesToEven) {
  EXPECT_EQ(Bf16(0x3f800000u), 0x3f80u);  // 1.0 is exact
  EXPECT_EQ(Bf16(0x3f807fffu), 0x3f80u);  // below half an ulp: down
  EXPECT_EQ(Bf16(0x3f808001u), 0x3f81u);  // above half an ulp: up
  EXPECT_EQ(Bf16(0x3f808000u), 0x3f80u);  // tie, 0x3f80 is even: down
  EXPECT_EQ(Bf16(0x3f818000u), 0x3f82u);  // tie, 0x3f81 is odd: up to even
  EXPECT_EQ(Bf16(0x3fffffffu), 0x4000u);  // carries into the exponent: 2.0
}

TEST(Bf16Rounding, NegativeValuesRoundTheirMagnitude) {
  EXPECT_EQ(Bf16(0xbf808000u), 0xbf80u);
  EXPECT_EQ(Bf16(0xbf818000u), 0xbf82u);
  EXPECT_EQ(Bf16(0xbf808001u), 0xbf81u);
  EXPECT_EQ(Bf16(0x80000000u), 0x8000u);  // -0 keeps its sign
}

TEST(Bf16Rounding, InfinityNanAndOverflow) {
  EXPECT_EQ(Bf16(0x7f800000u), 0x7f80u);
  EXPECT_EQ(Bf16(0xff800000u), 0xff80u);
  EXPECT_EQ(Bf16(0x7fc00000u), 0x7fc0u);
  // A signalling NaN whose payload is only in the dropped bits stays a NaN
  // (rounding must not turn it into infinity).
  EXPECT_TRUE(std::isnan(RoundToBf16(FromBits(0x7f800001u))));
  EXPECT_TRUE(std::isnan(RoundToBf16(FromBits(0xff800001u))));
  EXPECT_EQ(Bf16(0x7f7f0000u), 0x7f7fu);  // bf16's largest finite value
  EXPECT_EQ(Bf16(0x7f7fffffu), 0x7f80u);  // FLT_MAX is past it: infinity
  EXPECT_EQ(Bf16(0xff7fffffu), 0xff80u);
}

TEST(Bf16Rounding, Subnormals) {
  EXPECT_EQ(Bf16(0x00000001u), 0x0000u);  // the smallest subnormal rounds to +0
  EXPECT_EQ(Bf16(0x00008000u), 0x0000u);  // tie to even (0)
  EXPECT_EQ(Bf16(0x00018000u), 0x0002u);  // tie to even (2)
  EXPECT_EQ(Bf16(0x00008001u), 0x0001u);  // bf16's smallest subnormal
  EXPECT_EQ(Bf16(0x007fffffu), 0x0080u);  // largest subnormal -> smallest normal
  EXPECT_EQ(Bf16(0x80018000u), 0x8002u);
}

TEST(Tf32Rounding, TenStoredSignificandBits) {
  EXPECT_EQ(Tf32(0x3f800000u), 0x3f800000u);
  EXPECT_EQ(Tf32(0x3f800fffu), 0x3f800000u);
  EXPECT_EQ(Tf32(0x3f801001u), 0x3f802000u);
  EXPECT_EQ(Tf32(0x3f801000u), 0x3f800000u);  // tie to even: down
  EXPECT_EQ(Tf32(0x3f803000u), 0x3f804000u);  // tie to even: up
  EXPECT_EQ(Tf32(0xbf803000u), 0xbf804000u);
  EXPECT_EQ(Tf32(0x3fffffffu), 0x40000000u);
  EXPECT_EQ(Tf32(0x7f800000u), 0x7f800000u);
  EXPECT_EQ(Tf32(0xff800000u), 0xff800000u);
  EXPECT_TRUE(std::isnan(RoundToTf32(FromBits(0x7f800001u))));
  EXPECT_EQ(Tf32(0x7f7fffffu), 0x7f800000u);
  EXPECT_EQ(Tf32(0x00001000u), 0x00000000u);
  EXPECT_EQ(Tf32(0x00003000u), 0x00004000u);
  EXPECT_EQ(Tf32(0x80003000u), 0x80004000u);
}

TEST(Precision, NamesRoundTripAndUnknownIsRefused) {
  for (Precision p : AllPrecisions()) EXPECT_EQ(ParsePrecision(PrecisionName(p)), p);
  EXPECT_FALSE(ParsePrecision("fp16").has_value());
  EXPECT_FALSE(ParsePrecision("BF16").has_value());
}

// The reference bf16/tf32 GEMM is the fp32 GEMM of the rounded operands,
// bitwise, for every transpose; and it differs from the fp32 GEMM.
TEST(ReferenceGemm, RoundsEachOperandThenMultipliesInFp32) {
  ReferenceBackend ref;
  for (Precision p : {Precision::kBf16, Precision::kTf32}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        GemmDesc d;
        d.batch = 2, d.m = 3, d.n = 4, d.k = 33, d.trans_a = ta, d.trans_b = tb;
        d.stride_a = d.m * d.k, d.stride_b = d.k * d.n, d.stride_c = d.m * d.n;
        std::vector<float> a(d.batch * d.m * d.k), b(d.batch * d.k * d.n);
        for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37f * i) * 1.7f;
        for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.91f * i) * 0.9f;
        std::vector<float> ra = a, rb = b;
        for (float& x : ra) x = RoundTo(p, x);
        for (float& x : rb) x = RoundTo(p, x);
        std::vector<float> c(d.batch * d.m * d.n), want(c.size()), fp32(c.size());
        GemmDesc d32 = d;
        d.precision = p;
        ref.Gemm(d, a.data(), b.data(), c.data());
        ref.Gemm(d32, ra.data(), rb.data(), want.data());
        ref.Gemm(d32, a.data(), b.data(), fp32.data());
        EXPECT_EQ(c, want) << PrecisionName(p) << " ta=" << ta << " tb=" << tb;
        EXPECT_NE(c, fp32) << PrecisionName(p) << ": the operands were not rounded";
      }
    }
  }
}

}  // namespace
}  // namespace tvlab
