#include "framework/core/rng.h"

#include "framework/core/cpu_features.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Known-answer vectors from Random123's tests/kat_vectors ("philox4x32 10").
TEST(Philox4x32, MatchesRandom123KnownAnswers) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RngStream, DrawDependsOnlyOnKeyAndIndex) {
  RngStream a(7, RngPurpose::kDropout, 11);
  RngStream b(7, RngPurpose::kDropout, 11);
  // Draw out of order from b: same values.
  EXPECT_EQ(a.Word(5), b.Word(5));
  EXPECT_EQ(a.Word(0), b.Word(0));
  std::vector<uint32_t> block(10);
  a.Words(3, 10, block.data());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(block[i], b.Word(3 + i)) << i;
}

// Every kernel of Words the CPU can run (the portable one, the AVX2 one,
// the AVX-512 one) against Philox4x32 block by block, at block numbers
// whose run of blocks crosses a multiple of 2^32 (the counter's high word
// changes inside).
TEST(RngStream, EveryPhiloxKernelIsTheBlockDefinition) {
  using Kernel = void (*)(uint64_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t*);
  struct Run {
    Kernel kernel;
    int blocks;
  };
  std::vector<Run> kernels = {{rng_internal::PhiloxLanesPortable, 8}};
  if (CpuHasAvx2()) kernels.push_back({rng_internal::PhiloxLanesAvx2, rng_internal::kAvx2Blocks});
  if (CpuHasAvx512f()) kernels.push_back({rng_internal::PhiloxLanesAvx512, rng_internal::kAvx512Blocks});
  const uint32_t purpose_word = 5u << 24, step_lo = 0x89abcdefu, step_hi = 3, key0 = 0xdeadbeefu, key1 = 17;
  for (const Run& run : kernels) {
    for (uint64_t block : {uint64_t{0}, uint64_t{8}, (uint64_t{1} << 32) - 3, (uint64_t{1} << 32) - 11,
                           (uint64_t{7} << 32) + 1}) {
      std::vector<uint32_t> out(4 * run.blocks + 1, 0xA5A5A5A5u);  // one word past the run: untouched
      run.kernel(block, purpose_word, step_lo, step_hi, key0, key1, out.data());
      for (int l = 0; l < run.blocks; ++l) {
        const uint64_t b = block + l;
        const std::array<uint32_t, 4> want = Philox4x32(
            {static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32) ^ purpose_word, step_lo, step_hi}, {key0, key1});
        for (int w = 0; w < 4; ++w)
          ASSERT_EQ(out[4 * l + w], want[w]) << run.blocks << " lanes, block " << b << " word " << w;
      }
      EXPECT_EQ(out[4 * run.blocks], 0xA5A5A5A5u);
    }
  }
  EXPECT_EQ(kernels.size(), 1u + CpuHasAvx2() + CpuHasAvx512f());
}

// Words computes whole runs of blocks side by side (the kernels above), and
// parts of runs through a buffer; each word must still be Philox4x32's
// block by block (Word), at every alignment and length around a run and
// the few words drawn block by block, at large block numbers (the
// counter's high word) and after SkipWords.
TEST(RngStream, BatchedWordsMatchWordByWord) {
  const RngStream stream = RngStream(0x123456789abcdefull, RngPurpose::kDropout, (7ull << 32) + 5);
  for (const RngStream& s : {stream, stream.SkipWords(3), stream.SkipWords((1ull << 34) - 70)}) {
    for (uint64_t first : {0ull, 1ull, 3ull, 4ull, 61ull, 64ull, 127ull, 130ull}) {
      for (uint64_t n : {0ull, 5ull, 15ull, 16ull, 17ull, 63ull, 64ull, 65ull, 127ull, 128ull, 129ull, 200ull, 300ull,
                         1031ull}) {
        std::vector<uint32_t> words(n);
        s.Words(first, n, words.data());
        for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(words[i], s.Word(first + i)) << first << " " << n << " " << i;
      }
    }
  }
}

// DropoutFactors against its definition (rng.h), element by element from
// Word: 0 when half (e & 1) of word e / 2 is below round(p * 65536), else
// 1 / (1 - p); odd and even first elements, odd and even lengths.
TEST(DropoutFactors, MatchTheDefinitionElementByElement) {
  const RngStream stream(42, RngPurpose::kDropout, 9);
  const float p = 0.3f;
  const uint32_t threshold = static_cast<uint32_t>(std::lround(p * 65536.0f));
  std::vector<uint32_t> scratch;
  for (uint64_t first : {0ull, 1ull, 2ull, 7ull, 130ull}) {
    for (int64_t n : {1, 2, 3, 64, 129, 1000}) {
      std::vector<float> out(n);
      DropoutFactors(stream, p, first, n, out.data(), scratch);
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t e = first + i;
        const uint32_t half = (stream.Word(e / 2) >> (16 * (e & 1))) & 0xFFFFu;
        ASSERT_EQ(out[i], half < threshold ? 0.0f : 1.0f / (1.0f - p)) << first << " " << n << " " << i;
      }
    }
  }
}

TEST(RngStream, DistinctKeysGiveDistinctStreams) {
  RngStream base(7, RngPurpose::kDropout, 11);
  EXPECT_NE(base.Word(0), RngStream(8, RngPurpose::kDropout, 11).Word(0));
  EXPECT_NE(base.Word(0), RngStream(7, RngPurpose::kInit, 11).Word(0));
  EXPECT_NE(base.Word(0), RngStream(7, RngPurpose::kDropout, 12).Word(0));
}

TEST(RngStream, MomentsOfUniformAndNormal) {
  RngStream s(1, RngPurpose::kInit, 0);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  std::vector<float> u(n);
  s.UniformFill(0, n, u.data());
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(u[i], 0.0f);
    ASSERT_LT(u[i], 1.0f);
    EXPECT_EQ(u[i], s.Uniform(i));
    su += u[i];
    float z = s.Normal(i);
    sn += z;
    sn2 += z * z;
  }
  EXPECT_NEAR(su / n, 0.5, 0.005);
  EXPECT_NEAR(sn / n, 0.0, 0.01);
  EXPECT_NEAR(sn2 / n, 1.0, 0.01);
  int counts[10] = {0};
  for (int i = 0; i < n; ++i) counts[s.UniformInt(i, 10)]++;
  for (int c : counts) EXPECT_NEAR(c, n / 10, n / 100);
}

// NormalFill is Normal index by index (one Words call per chunk instead of
// two Words a normal), from an odd first index, across its chunks.
TEST(RngStream, NormalFillIsNormalOneByOne) {
  RngStream s(11, RngPurpose::kInit, 5);
  for (uint64_t first : {0u, 3u, 4093u}) {
    for (uint64_t n : {0u, 1u, 7u, 4096u, 9000u}) {
      std::vector<float> z(n);
      s.NormalFill(first, n, z.data());
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(z[i], s.Normal(first + i)) << first << " + " << i;
    }
  }
}

// UniformInts is UniformInt index by index (one Words call instead of a
// Word each), from an odd first index, across Philox blocks.
TEST(RngStream, UniformIntsAreUniformIntsOneByOne) {
  const RngStream s(11, RngPurpose::kTrainData, 3);
  for (uint32_t bound : {2u, 10u, 1000u}) {
    std::vector<int32_t> got(37, -1);
    s.UniformInts(5, got.size(), bound, got.data());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], static_cast<int32_t>(s.UniformInt(5 + i, bound))) << "index " << 5 + i << " bound " << bound;
  }
}

}  // namespace
}  // namespace tvlab
