// philox.cuh compiled for the host against the CPU's RngStream and the
// reference backend's DropoutMask: the same words and the same masks, so a
// mask the GPU draws equals the CPU's bit for bit. Runs without CUDA (the
// .cuh is plain C++ to the host compiler).

#include "framework/backend/gpu_cuda/philox.cuh"

#include <cstdint>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/gpu_cuda/dropout_kernel.h"
#include "framework/core/rng.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(PhiloxCuh, MatchesRandom123KnownAnswers) {
  // The vectors of framework/core/rng_test.cc.
  cuda::PhiloxBlock b = cuda::Philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(b.w[0], 0x6627e8d5u);
  EXPECT_EQ(b.w[3], 0x9b00dbd8u);
  b = cuda::Philox4x32_10(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822,
                          0x299f31d0);
  EXPECT_EQ(b.w[0], 0xd16cfe09u);
  EXPECT_EQ(b.w[1], 0x94fdccebu);
  EXPECT_EQ(b.w[2], 0x5001e420u);
  EXPECT_EQ(b.w[3], 0x24126ea1u);
}

TEST(PhiloxCuh, EveryWordEqualsRngStreamOnManyStreamsAndCounters) {
  // Seeds using both key words, every purpose, steps beyond 2^32, and
  // indices whose block crosses 2^32 (the counter's second word).
  const std::vector<uint64_t> seeds = {0, 1, 1234, 0xDEADBEEFCAFEF00Dull};
  const std::vector<RngPurpose> purposes = {RngPurpose::kInit, RngPurpose::kTrainData,
                                            RngPurpose::kEvalData, RngPurpose::kDropout,
                                            RngPurpose::kSampling};
  const std::vector<uint64_t> steps = {0, 17, (uint64_t{1} << 32) + 5};
  const std::vector<uint64_t> starts = {0, 1000003, (uint64_t{1} << 34) - 8,
                                        (uint64_t{1} << 40) + 3};
  int64_t compared = 0;
  for (uint64_t seed : seeds)
    for (RngPurpose purpose : purposes)
      for (uint64_t step : steps) {
        const RngStream stream(seed, purpose, step);
        const cuda::PhiloxStream device = cuda::MakePhiloxStream(stream);
        for (uint64_t start : starts)
          for (uint64_t index = start; index < start + 64; ++index) {
            ASSERT_EQ(cuda::PhiloxStreamWord(device, index), stream.Word(index))
                << "seed " << seed << " purpose " << static_cast<int>(purpose) << " step "
                << step << " word " << index;
            ++compared;
          }
      }
  EXPECT_EQ(compared, 4 * 5 * 3 * 4 * 64);
}

// The dropout kernel's element indexing (one Philox block -> 8 elements),
// run on the host, against the reference backend's DropoutMask.
TEST(PhiloxCuh, DropoutMaskIndexingEqualsTheReferenceBackend) {
  auto reference = std::move(*MakeBackend("reference"));
  for (float p : {0.1f, 0.25f, 0.5f, 0.9f}) {
    const RngStream stream(99, RngPurpose::kDropout, 3);
    const int64_t n = 4099;  // not a multiple of 8: a partial last block
    std::vector<float> want(n);
    reference->DropoutMask(stream, p, want.data(), n);
    const cuda::PhiloxStream device = cuda::MakePhiloxStream(stream);
    const uint32_t threshold = DropoutThreshold(p);
    const float keep_scale = 1.0f / (1.0f - p);
    std::vector<float> got(n, -1.0f);
    for (int64_t block = 0; block * 8 < n; ++block) {  // the kernel's threads
      const cuda::PhiloxBlock words = cuda::PhiloxStreamFourWords(device, block);
      for (int e = 0; e < 8 && block * 8 + e < n; ++e) {
        const uint32_t half = (words.w[e >> 1] >> ((e & 1) * 16)) & 0xFFFFu;
        got[block * 8 + e] = half < threshold ? 0.0f : keep_scale;
      }
    }
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], want[i]) << "p " << p << " element " << i;
      // The per-element form the fused attention kernels use.
      ASSERT_EQ(cuda::DropoutFactor(device, i, threshold, keep_scale), want[i]) << i;
      dropped += got[i] == 0.0f;
    }
    EXPECT_NEAR(static_cast<double>(dropped) / n, p, 0.03) << "p " << p;
  }
}

// A data-parallel shard draws from a skipped stream (RngStream::SkipWords;
// framework/autograd/ops.cc's Dropout): the kernel's indexing must apply the
// word offset, also one that is not a multiple of a Philox block's 4 words.
TEST(PhiloxCuh, DropoutMaskOfASkippedStreamEqualsTheReferenceBackend) {
  auto reference = std::move(*MakeBackend("reference"));
  const float p = 0.3f;
  for (uint64_t offset : {0u, 1u, 2u, 3u, 4u, 4097u}) {
    const RngStream stream = RngStream(7, RngPurpose::kDropout, 11).SkipWords(offset);
    const int64_t n = 203;
    std::vector<float> want(n);
    reference->DropoutMask(stream, p, want.data(), n);
    const cuda::PhiloxStream device = cuda::MakePhiloxStream(stream);
    ASSERT_EQ(device.word_offset, offset);
    const uint32_t threshold = DropoutThreshold(p);
    const float keep_scale = 1.0f / (1.0f - p);
    for (int64_t block = 0; block * 8 < n; ++block) {
      const cuda::PhiloxBlock words = cuda::PhiloxStreamFourWords(device, block);
      for (int e = 0; e < 8 && block * 8 + e < n; ++e) {
        const uint32_t half = (words.w[e >> 1] >> ((e & 1) * 16)) & 0xFFFFu;
        ASSERT_EQ(half < threshold ? 0.0f : keep_scale, want[block * 8 + e])
            << "offset " << offset << " element " << block * 8 + e;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(cuda::DropoutFactor(device, i, threshold, keep_scale), want[i]) << offset << " " << i;
  }
}

}  // namespace
}  // namespace tvlab
