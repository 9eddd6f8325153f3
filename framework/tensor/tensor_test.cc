#include "framework/tensor/tensor.h"

#include <memory>
#include <vector>

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

TEST(CachingAllocator, LargeHostBlocksStartOnAHugePage) {
  CachingAllocator& host = AllocatorFor(Device::kCpu);
  host.EmptyCache();  // so the blocks below come from HostMemory
  for (size_t bytes : {kHugePage, kHugePage + 4096, 5 * kHugePage / 2}) {
    Tensor t = Tensor::Empty({static_cast<int64_t>(bytes / sizeof(float))}, Device::kCpu);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % kHugePage, 0u) << bytes << " bytes";
    t.data()[bytes / sizeof(float) - 1] = 1.0f;  // the last element is writable
  }
  Tensor small = Tensor::Empty({1000}, Device::kCpu);  // a cache line is enough below
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  host.EmptyCache();
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

namespace tvlab {
namespace {

// Step capture's pool: buffers made while it is active come from it and go
// back to it (never to the allocator), and the same sequence of
// allocations and releases from an all-free pool gets the same addresses.
TEST(BufferPool, SameSequenceSameAddressesAndBuffersReturnToThePool) {
  auto pool = std::make_shared<BufferPool>(Device::kCpu);
  auto run = [&]() {
    ScopedBufferPool scope(pool);
    std::vector<const float*> addresses;
    Tensor a = Tensor::Empty({100});
    Tensor b = Tensor::Empty({300});
    addresses.push_back(a.ptr());
    addresses.push_back(b.ptr());
    a = Tensor();                      // freed: the next {100} takes its block
    Tensor c = Tensor::Empty({100});
    Tensor d = Tensor::Empty({100});   // a second block of that size
    addresses.push_back(c.ptr());
    addresses.push_back(d.ptr());
    return addresses;
  };
  const std::vector<const float*> first = run();
  EXPECT_EQ(pool->in_use(), 0);
  EXPECT_EQ(pool->blocks(), 3);
  EXPECT_EQ(first[2], first[0]);
  EXPECT_EQ(run(), first);
  EXPECT_EQ(pool->blocks(), 3);  // nothing new
  EXPECT_TRUE(pool->Holds(first[1] + 299));
  Tensor outside = Tensor::Empty({100});  // no scope: the allocator's
  EXPECT_FALSE(pool->Holds(outside.ptr()));
}

// The allocator's live blocks: found from any pointer inside one, and
// StillLive false once released, even when the same address is handed out
// again (a new generation).
TEST(CachingAllocator, LiveBlocksHaveGenerations) {
  CachingAllocator& allocator = AllocatorFor(Device::kCpu);
  Tensor t = Tensor::Empty({1000});
  CachingAllocator::LiveBlock block;
  ASSERT_TRUE(allocator.FindLiveBlock(t.ptr() + 999, &block));
  EXPECT_EQ(block.begin, static_cast<const void*>(t.ptr()));
  EXPECT_TRUE(allocator.StillLive(block));
  const float* address = t.ptr();
  t = Tensor();
  EXPECT_FALSE(allocator.StillLive(block));
  Tensor again = Tensor::Empty({1000});
  ASSERT_EQ(again.ptr(), address);  // the cache hands the same block back
  EXPECT_FALSE(allocator.StillLive(block));
  int on_the_stack = 0;
  EXPECT_FALSE(allocator.FindLiveBlock(&on_the_stack, &block));
}

}  // namespace
}  // namespace tvlab
