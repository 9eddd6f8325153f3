// Dropout in one pass: each DropoutMultiply (dropout_multiply.h) and
// KeptMultiply (kept_mask_bits.h) kernel the CPU can run (portable, AVX2,
// AVX-512) against the two steps it fuses, bit for bit, at lengths around the vector widths and
// with the values a multiply can trip on (signed zeros, infinities, NaN,
// subnormals); and cpu_onednn's PointwiseChain, which runs a dropout mask
// and the multiply that reads it as one pass, against the kernels one after
// another, the mask's kept bits included.

#include "framework/backend/cpu_onednn/dropout_multiply.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/backend/cpu_onednn/kept_mask_bits.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace onednn {
namespace {

namespace d = dropout_multiply_internal;
namespace k = kept_bits_internal;

// One instruction set's two kernels.
struct Kernels {
  const char* name;
  bool runs;
  decltype(&d::DropoutMultiplyPortable) dropout;
  decltype(&k::KeptMultiplyPortable) kept;
};

std::vector<Kernels> KernelsHere() {
  __builtin_cpu_init();  // the CPU itself: the cap does not stop a test from running what the CPU can
  return {{"portable", true, d::DropoutMultiplyPortable, k::KeptMultiplyPortable},
          {"avx2", __builtin_cpu_supports("avx2") != 0, d::DropoutMultiplyAvx2, k::KeptMultiplyAvx2},
          {"avx512", __builtin_cpu_supports("avx512f") != 0, d::DropoutMultiplyAvx512, k::KeptMultiplyAvx512}};
}

// Values in [-2, 2) with the edge cases of a multiply every 13 elements.
std::vector<float> Values(int64_t n, uint64_t salt) {
  const float edges[] = {0.0f,
                         -0.0f,
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::denorm_min(),
                         -1e-40f};
  RngStream rng(3, RngPurpose::kInit, salt);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i % 13 == 5 ? edges[(i / 13) % 7] : 4.0f * rng.Uniform(i) - 2.0f;
  return v;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The two steps DropoutMultiply fuses: DropoutFactors' factors of elements
// [first, first + n), then x times them; the factors' kept bits.
std::vector<float> Unfused(const RngStream& stream, float p, int64_t first, const std::vector<float>& x,
                           std::vector<uint8_t>* bits) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> factors(n), out(n);
  std::vector<uint32_t> words;
  DropoutFactors(stream, p, first, n, factors.data(), words);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * factors[i];
  bits->assign((n + 7) / 8, 0);
  KeptBits(factors.data(), n, bits->data());
  return out;
}

TEST(DropoutMultiply, EveryKernelIsTheFactorsThenTheMultiply) {
  const RngStream stream(5, RngPurpose::kDropout, 2);
  for (const Kernels& kernel : KernelsHere()) {
    if (!kernel.runs) continue;
    for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 33, 100, 1027}) {
      for (float p : {0.1f, 0.5f}) {
        for (int64_t first : {0, 6, 1024}) {
          SCOPED_TRACE(testing::Message() << kernel.name << ", n " << n << ", p " << p << ", first " << first);
          const std::vector<float> x = Values(n, static_cast<uint64_t>(n));
          std::vector<uint8_t> want_bits;
          const std::vector<float> want = Unfused(stream, p, first, x, &want_bits);
          std::vector<uint32_t> words((n + 1) / 2);
          stream.Words(static_cast<uint64_t>(first / 2), words.size(), words.data());
          std::vector<float> out(n + 1, -3.0f);
          std::vector<uint8_t> bits((n + 7) / 8 + 1, 0xAB);  // one guard byte past the bits
          kernel.dropout(words.data(), n, DropoutThreshold(p), DropoutKeepScale(p), x.data(), out.data(), bits.data());
          EXPECT_EQ(out.back(), -3.0f) << "wrote past out";
          out.pop_back();
          EXPECT_TRUE(SameBits(out, want));
          EXPECT_EQ(bits.back(), 0xAB) << "wrote past the bits";
          bits.pop_back();
          EXPECT_EQ(bits, want_bits);
          std::vector<float> in_place = x;  // out = x, no bits
          kernel.dropout(words.data(), n, DropoutThreshold(p), DropoutKeepScale(p), in_place.data(), in_place.data(),
                         nullptr);
          EXPECT_TRUE(SameBits(in_place, want)) << "in place";
        }
      }
    }
  }
}

TEST(DropoutMultiply, EveryKeptKernelIsTheFactorsOfTheBitsThenTheMultiply) {
  const RngStream stream(6, RngPurpose::kDropout, 9);
  const float p = 0.3f, keep_scale = DropoutKeepScale(p);
  for (const Kernels& kernel : KernelsHere()) {
    if (!kernel.runs) continue;
    for (int64_t n : {1, 7, 8, 9, 16, 17, 31, 100, 1027}) {
      SCOPED_TRACE(testing::Message() << kernel.name << ", n " << n);
      const std::vector<float> x = Values(n, 7);
      std::vector<uint8_t> bits;
      Unfused(stream, p, 0, x, &bits);
      std::vector<float> factors(n), want(n);
      FactorsOfKeptBits(bits.data(), n, keep_scale, factors.data());
      for (int64_t i = 0; i < n; ++i) want[i] = x[i] * factors[i];
      std::vector<float> out(n + 1, -3.0f);
      kernel.kept(bits.data(), n, keep_scale, x.data(), out.data());
      EXPECT_EQ(out.back(), -3.0f) << "wrote past out";
      out.pop_back();
      EXPECT_TRUE(SameBits(out, want));
      std::vector<float> in_place = x;
      kernel.kept(bits.data(), n, keep_scale, in_place.data(), in_place.data());
      EXPECT_TRUE(SameBits(in_place, want)) << "in place";
    }
  }
}

PointwiseStep Multiply(const float* a, const float* b, float* out) {
  PointwiseStep s;
  s.kind = PointwiseStep::Kind::kBinary, s.op = BinaryOp::kMul, s.a = a, s.b = b, s.out = out;
  return s;
}

// The capture's chains: a dropout mask drawn into a scratch tile with its
// bits kept, times x (the mask as either operand), plus a residual; and a
// later chain's factors from those bits times dy. Both fuse the mask with
// its multiply; with the mask also read after the multiply, nothing fuses.
// Each against DropoutMask and Binary one after another, bit for bit, at
// sizes below, at and across the 1024-element tile and past the threading
// threshold of chains that draw (2^16).
TEST(DropoutMultiply, ChainsOfAMaskAndItsMultiplyAreTheKernelsInTurn) {
  OnednnBackend be;
  const RngStream stream(8, RngPurpose::kDropout, 3);
  const float p = 0.25f;
  for (int64_t n : {1, 7, 1023, 1024, 1025, 3001, 70001}) {
    for (bool mask_first : {false, true}) {
      for (bool mask_read_later : {false, true}) {
        SCOPED_TRACE(testing::Message() << "n " << n << ", mask as a: " << mask_first
                                        << ", mask read later: " << mask_read_later);
        const std::vector<float> x = Values(n, 1), res = Values(n, 2), dy = Values(n, 3);
        const Shape s = {n};
        std::vector<float> mask(n), y(n), out(n), dx(n);
        be.DropoutMask(stream, p, mask.data(), n);
        be.Binary(BinaryOp::kMul, mask_first ? mask.data() : x.data(), s, mask_first ? x.data() : mask.data(), s,
                  y.data(), s);
        be.Binary(BinaryOp::kAdd, res.data(), s, mask_read_later ? mask.data() : y.data(), s, out.data(), s);
        be.Binary(BinaryOp::kMul, dy.data(), s, mask.data(), s, dx.data(), s);

        std::vector<float> tile_mask(n, 7.0f), chained_y(n, 7.0f), chained_out(n), chained_dx(n);
        std::vector<uint8_t> bits((n + 7) / 8, 0xAB);
        PointwiseStep draw;
        draw.kind = PointwiseStep::Kind::kDropoutMask;
        draw.stream = stream, draw.p = p, draw.out = tile_mask.data(), draw.kept = bits.data(), draw.scratch = true;
        PointwiseStep times = mask_first ? Multiply(tile_mask.data(), x.data(), chained_y.data())
                                         : Multiply(x.data(), tile_mask.data(), chained_y.data());
        PointwiseStep plus = Multiply(nullptr, nullptr, chained_out.data());
        plus.op = BinaryOp::kAdd, plus.a = res.data(), plus.b = mask_read_later ? tile_mask.data() : chained_y.data();
        be.PointwiseChain({draw, times, plus}, n);
        PointwiseStep read;
        read.kind = PointwiseStep::Kind::kKeptMask;
        read.p = p, read.out = tile_mask.data(), read.kept = bits.data(), read.scratch = true;
        be.PointwiseChain({read, Multiply(dy.data(), tile_mask.data(), chained_dx.data())}, n);

        EXPECT_TRUE(SameBits(chained_y, y)) << "x times the mask";
        EXPECT_TRUE(SameBits(chained_out, out)) << "the residual";
        EXPECT_TRUE(SameBits(chained_dx, dx)) << "dy times the factors of the kept bits";
        EXPECT_TRUE(SameBits(tile_mask, std::vector<float>(n, 7.0f))) << "the scratch mask reached memory";
        for (int64_t e = 0; e < n; ++e)
          ASSERT_EQ((bits[e / 8] >> (e % 8)) & 1, mask[e] != 0.0f ? 1 : 0) << "kept bit " << e;
      }
    }
  }
}

}  // namespace
}  // namespace onednn
}  // namespace tvlab
