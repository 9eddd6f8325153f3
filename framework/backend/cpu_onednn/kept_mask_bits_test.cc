// Each KeptBits / FactorsOfKeptBits kernel the CPU can run (portable,
// AVX2, AVX-512) against the header's definition, bit for bit, at lengths
// around its vector widths.

#include "framework/backend/cpu_onednn/kept_mask_bits.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "framework/core/cpu_features.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace onednn {
namespace {

namespace k = kept_bits_internal;

struct Kernels {
  const char* name;
  bool runs;
  void (*bits)(const float*, int64_t, uint8_t*);
  void (*factors)(const uint8_t*, int64_t, float, float*);
};

std::vector<Kernels> KernelsHere() {
  __builtin_cpu_init();  // the CPU itself: the cap does not stop a test from running what the CPU can
  return {{"portable", true, k::KeptBitsPortable, k::FactorsOfKeptBitsPortable},
          {"avx2", __builtin_cpu_supports("avx2") != 0, k::KeptBitsAvx2, k::FactorsOfKeptBitsAvx2},
          {"avx512", __builtin_cpu_supports("avx512f") != 0, k::KeptBitsAvx512, k::FactorsOfKeptBitsAvx512}};
}

// Dropout factors: 0 for about one element in five, else the keep scale.
std::vector<float> Factors(int64_t n, float keep_scale) {
  std::vector<float> f(n);
  uint32_t s = 12345;
  for (float& x : f) x = ((s = s * 1664525u + 1013904223u) >> 29) == 0 ? 0.0f : keep_scale;
  return f;
}

TEST(KeptMaskBits, EveryKernelKeepsTheDefinition) {
  const float keep_scale = 1.0f / (1.0f - 0.2f);
  for (const Kernels& kernel : KernelsHere()) {
    if (!kernel.runs) continue;
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1027}) {
      SCOPED_TRACE(testing::Message() << kernel.name << ", n " << n);
      const std::vector<float> factors = Factors(n, keep_scale);
      std::vector<uint8_t> kept((n + 7) / 8 + 1, 0xAB);  // one guard byte past the bits
      kernel.bits(factors.data(), n, kept.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ((kept[i / 8] >> (i % 8)) & 1, factors[i] != 0.0f ? 1 : 0) << i;
      if (n % 8 != 0) {
        EXPECT_EQ(kept[n / 8] >> (n % 8), 0) << "the last byte's unused bits";
      }
      EXPECT_EQ(kept.back(), 0xAB) << "wrote past the bits";
      std::vector<float> back(n + 1, -1.0f);
      kernel.factors(kept.data(), n, keep_scale, back.data());
      EXPECT_EQ(std::memcmp(back.data(), factors.data(), n * sizeof(float)), 0);
      EXPECT_EQ(back[n], -1.0f) << "wrote past the factors";
    }
  }
}

// The dispatching functions agree with the portable kernel.
TEST(KeptMaskBits, ChosenKernelMatchesPortable) {
  const int64_t n = 4099;
  const std::vector<float> factors = Factors(n, 2.0f);
  std::vector<uint8_t> chosen((n + 7) / 8), portable((n + 7) / 8);
  KeptBits(factors.data(), n, chosen.data());
  k::KeptBitsPortable(factors.data(), n, portable.data());
  EXPECT_EQ(chosen, portable);
  std::vector<float> back(n);
  FactorsOfKeptBits(chosen.data(), n, 2.0f, back.data());
  EXPECT_EQ(back, factors);
}

}  // namespace
}  // namespace onednn
}  // namespace tvlab
