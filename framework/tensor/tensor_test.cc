#include "framework/tensor/tensor.h"

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Tensor, ShapeStridesAndReshapeShareStorage) {
  Tensor t = Tensor::FromVector({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.dim(-1), 3);
  Tensor r = t.Reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  r.data()[5] = 50;
  EXPECT_EQ(t.data()[5], 50);  // a view, not a copy
  Tensor c = t.Clone();
  c.data()[0] = 9;
  EXPECT_EQ(t.data()[0], 0);  // a copy
  EXPECT_EQ(ShapeToString(t.shape()), "(2, 3)");
}

TEST(Tensor, BadReshapeIsAnInvariantViolation) {
  Tensor t = Tensor::Zeros({2, 3});
  EXPECT_DEATH(t.Reshape({4, 2}), "internal invariant violated");
}

TEST(CachingAllocator, SizeClassesWasteAtMostAnEighthAndAreMultiplesOf512) {
  for (size_t bytes : {1ul, 511ul, 512ul, 513ul, 4096ul, 4097ul, 1000000ul, (1ul << 30) + 1}) {
    const size_t r = CachingAllocator::RoundSize(bytes);
    EXPECT_GE(r, bytes);
    EXPECT_EQ(r % 512, 0u) << bytes;
    if (bytes > 512) {
      EXPECT_LE(r - bytes, bytes / 8 + 512) << bytes;
    }
  }
  // Requests that differ by a few bytes share a class (and so reuse blocks).
  EXPECT_EQ(CachingAllocator::RoundSize(100000), CachingAllocator::RoundSize(100004));
}

TEST(CachingAllocator, SteadyStateReusesFreedBlocksAndTracksThePeak) {
  CachingAllocator& host = AllocatorFor(Device::kCpu);
  host.EmptyCache();
  host.ResetPeak();
  const AllocatorStats before = host.Stats();
  for (int step = 0; step < 5; ++step) {
    Tensor a = Tensor::Empty({1000, 37}, Device::kCpu);
    Tensor b = Tensor::Empty({1000, 37}, Device::kCpu);
  }
  const AllocatorStats after = host.Stats();
  // Two blocks from the system in the first step, none afterwards.
  EXPECT_EQ(after.system_allocations - before.system_allocations, 2);
  EXPECT_EQ(after.cache_hits - before.cache_hits, 8);
  EXPECT_EQ(after.in_use_bytes, before.in_use_bytes);
  const int64_t block = static_cast<int64_t>(CachingAllocator::RoundSize(1000 * 37 * 4));
  EXPECT_EQ(after.peak_in_use_bytes - before.in_use_bytes, 2 * block);
  EXPECT_EQ(after.cached_bytes, 2 * block);
  host.EmptyCache();
  EXPECT_EQ(host.Stats().cached_bytes, 0);
}

TEST(Tensor, CopiesToAndFromTheHostAreExplicitAndExact) {
  Tensor t = Tensor::FromVector({3}, {1.5f, -2.0f, 3.25f}, Device::kCpu);
  EXPECT_EQ(t.device(), Device::kCpu);
  EXPECT_EQ(t.ToHost().ptr(), t.ptr());  // already on the host: same storage
  EXPECT_EQ(t.ToVector(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  DeviceInts ids = DeviceInts::Upload({4, -1, 7}, Device::kCpu);
  EXPECT_EQ(ids.size(), 3);
  EXPECT_EQ(ids.ToVector(), (std::vector<int32_t>{4, -1, 7}));
}

}  // namespace
}  // namespace tvlab
