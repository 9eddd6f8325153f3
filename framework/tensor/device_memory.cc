#include "framework/tensor/device_memory.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "framework/core/check.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TVLAB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TVLAB_ASAN 1
#endif
#ifdef TVLAB_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include <sys/mman.h>

namespace tvlab {
namespace {

// Host memory: 64-byte aligned (a cache line; AVX-512 loads). Blocks of
// kHugePage bytes or more start on a 2 MiB boundary and are advised to the
// kernel as transparent huge pages (MADV_HUGEPAGE: used where THP is
// "madvise" or "always", ignored where it is "never" or absent): a step's
// large activations and gradients then take 512x fewer TLB entries and
// page faults (GPT config step 5.0% faster at one thread and 6.3% at two
// on an AVX-512 Xeon, bench/README.md, "Huge pages for large host
// blocks"). PyTorch's THP_MEM_ALLOC_ENABLE does the same for its CPU
// allocations.
class HostMemory : public DeviceMemory {
 public:
  Device device() const override { return Device::kCpu; }
  void* Allocate(size_t bytes) override {
    if (bytes < kHugePage) return std::aligned_alloc(64, bytes);
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kHugePage, bytes) != 0) return nullptr;
    // Advice on the block's 4 KiB pages: the kernel may decline, and backs
    // a part shorter than a huge page at the end with small pages.
    constexpr size_t kSmallPage = 4096;
    madvise(ptr, (bytes + kSmallPage - 1) / kSmallPage * kSmallPage, MADV_HUGEPAGE);
    return ptr;
  }
  void Free(void* ptr, size_t) override { std::free(ptr); }
  void CopyToHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void CopyFromHost(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void CopyOnDevice(const void* src, void* dst, size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void Fill(float* dst, int64_t n, float value) override { std::fill(dst, dst + n, value); }
};

constexpr int kNumDevices = 3;

struct DeviceTable {
  std::mutex mu;
  std::array<std::unique_ptr<CachingAllocator>, kNumDevices> allocators;
  Device current = Device::kCpu;
};

DeviceTable& Table() {
  static auto* table = [] {
    auto* t = new DeviceTable();
    t->allocators[static_cast<int>(Device::kCpu)] =
        std::make_unique<CachingAllocator>(std::make_unique<HostMemory>());
    return t;
  }();
  return *table;
}

}  // namespace

const char* DeviceName(Device device) {
  switch (device) {
    case Device::kCpu: return "cpu";
    case Device::kSimulated: return "simulated_device";
    case Device::kCuda: return "cuda";
  }
  return "?";
}

struct CachingAllocator::State {
  mutable std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // by size class
  AllocatorStats stats;
  // Every block handed out and not released: its rounded size and
  // generation (FindLiveBlock, StillLive).
  absl::flat_hash_map<const void*, std::pair<size_t, uint64_t>> live;
  uint64_t next_generation = 1;
};

namespace {
// SetMemoryObserver's, per thread.
thread_local Device observed_device = Device::kCpu;
thread_local DeviceMemory* memory_observer = nullptr;
// ScopedBufferPool's, per thread.
thread_local std::shared_ptr<BufferPool> active_pool;
}  // namespace

CachingAllocator::CachingAllocator(std::unique_ptr<DeviceMemory> memory)
    : memory_(std::move(memory)), state_(std::make_unique<State>()) {}

CachingAllocator::~CachingAllocator() { EmptyCache(); }

size_t CachingAllocator::RoundSize(size_t bytes) {
  constexpr size_t kMin = 512;
  if (bytes <= kMin) return kMin;
  size_t top = size_t{1} << (63 - __builtin_clzll(bytes));  // largest power of 2 <= bytes
  size_t step = std::max(kMin, top / 8);
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::Allocate(size_t bytes, size_t* rounded) {
  *rounded = RoundSize(bytes);
  std::lock_guard<std::mutex> lock(state_->mu);
  AllocatorStats& s = state_->stats;
  void* ptr = nullptr;
  auto it = state_->free_blocks.find(*rounded);
  if (it != state_->free_blocks.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    s.cached_bytes -= static_cast<int64_t>(*rounded);
    ++s.cache_hits;
#ifdef TVLAB_ASAN
    if (memory_->device() == Device::kCpu) ASAN_UNPOISON_MEMORY_REGION(ptr, *rounded);
#endif
  } else {
    ptr = memory_->Allocate(*rounded);
    if (ptr == nullptr) {  // give the cache back and try once more
      for (auto& [size, blocks] : state_->free_blocks)
        for (void* b : blocks) memory_->Free(b, size);
      state_->free_blocks.clear();
      s.cached_bytes = 0;
      ptr = memory_->Allocate(*rounded);
    }
    TVLAB_CHECK(ptr != nullptr) << "out of " << DeviceName(memory_->device()) << " memory: "
                                << *rounded << " bytes requested with " << s.in_use_bytes
                                << " in use";
    ++s.system_allocations;
  }
  s.in_use_bytes += static_cast<int64_t>(*rounded);
  s.peak_in_use_bytes = std::max(s.peak_in_use_bytes, s.in_use_bytes);
  state_->live[ptr] = {*rounded, state_->next_generation++};
  return ptr;
}

void CachingAllocator::Release(void* ptr, size_t rounded) {
  std::lock_guard<std::mutex> lock(state_->mu);
#ifdef TVLAB_ASAN
  // A read of a freed tensor is then an ASan report, as without the cache.
  if (memory_->device() == Device::kCpu) ASAN_POISON_MEMORY_REGION(ptr, rounded);
#endif
  state_->free_blocks[rounded].push_back(ptr);
  state_->live.erase(ptr);
  state_->stats.in_use_bytes -= static_cast<int64_t>(rounded);
  state_->stats.cached_bytes += static_cast<int64_t>(rounded);
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& [size, blocks] : state_->free_blocks)
    for (void* b : blocks) {
#ifdef TVLAB_ASAN
      if (memory_->device() == Device::kCpu) ASAN_UNPOISON_MEMORY_REGION(b, size);
#endif
      memory_->Free(b, size);
    }
  state_->free_blocks.clear();
  state_->stats.cached_bytes = 0;
}

AllocatorStats CachingAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

DeviceMemory& CachingAllocator::memory() {
  if (memory_observer != nullptr && observed_device == memory_->device()) return *memory_observer;
  return *memory_;
}

bool CachingAllocator::FindLiveBlock(const void* ptr, LiveBlock* block) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  const auto* p = static_cast<const char*>(ptr);
  for (const auto& [begin, entry] : state_->live) {
    const auto* b = static_cast<const char*>(begin);
    if (p >= b && p < b + entry.first) {
      *block = LiveBlock{begin, entry.first, entry.second};
      return true;
    }
  }
  return false;
}

bool CachingAllocator::StillLive(const LiveBlock& block) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->live.find(block.begin);
  return it != state_->live.end() && it->second.second == block.generation;
}

void SetMemoryObserver(Device device, DeviceMemory* observer) {
  observed_device = device;
  memory_observer = observer;
}

BufferPool::~BufferPool() {
  CachingAllocator& allocator = AllocatorFor(device_);
  for (auto& [size, blocks] : by_size_)
    for (const Block& b : blocks) allocator.Release(b.ptr, size);
}

void* BufferPool::Take(size_t rounded) {
  std::vector<Block>& blocks = by_size_[rounded];
  ++in_use_;
  for (Block& b : blocks)
    if (b.free) {
      b.free = false;
      if (listener_) listener_(b.ptr, true);
      return b.ptr;
    }
  size_t same = 0;
  void* ptr = AllocatorFor(device_).Allocate(rounded, &same);
  blocks.push_back(Block{ptr, false});
  bytes_ += static_cast<int64_t>(rounded);
  if (listener_) listener_(ptr, true);
  return ptr;
}

void BufferPool::Give(void* ptr, size_t rounded) {
  for (Block& b : by_size_[rounded])
    if (b.ptr == ptr) {
      TVLAB_CHECK(!b.free) << "a pool block given back twice";
      b.free = true;
      --in_use_;
      if (listener_) listener_(ptr, false);
      return;
    }
  TVLAB_CHECK(false) << "a block given back to a pool that does not hold it";
}

int64_t BufferPool::blocks() const {
  int64_t n = 0;
  for (const auto& [size, blocks] : by_size_) n += static_cast<int64_t>(blocks.size());
  return n;
}

bool BufferPool::Holds(const void* ptr) const { return BlockStart(ptr) != nullptr; }

const void* BufferPool::BlockStart(const void* ptr) const {
  const auto* p = static_cast<const char*>(ptr);
  for (const auto& [size, blocks] : by_size_)
    for (const Block& b : blocks)
      if (p >= static_cast<const char*>(b.ptr) && p < static_cast<const char*>(b.ptr) + size) return b.ptr;
  return nullptr;
}

ScopedBufferPool::ScopedBufferPool(std::shared_ptr<BufferPool> pool) : previous_(std::move(active_pool)) {
  active_pool = std::move(pool);
}

ScopedBufferPool::~ScopedBufferPool() { active_pool = std::move(previous_); }

void CachingAllocator::ResetPeak() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stats.peak_in_use_bytes = state_->stats.in_use_bytes;
}

bool RegisterDeviceMemory(std::unique_ptr<DeviceMemory> memory) {
  DeviceTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& slot = t.allocators[static_cast<int>(memory->device())];
  if (slot) return false;
  slot = std::make_unique<CachingAllocator>(std::move(memory));
  return true;
}

bool HasDeviceMemory(Device device) {
  DeviceTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.allocators[static_cast<int>(device)] != nullptr;
}

CachingAllocator& AllocatorFor(Device device) {
  DeviceTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& slot = t.allocators[static_cast<int>(device)];
  TVLAB_CHECK(slot != nullptr) << "no memory registered for device " << DeviceName(device)
                               << " (its backend is not linked into this binary)";
  return *slot;
}

Device CurrentDevice() { return Table().current; }
void SetCurrentDevice(Device device) { Table().current = device; }

Buffer::Buffer(Device device, size_t bytes) : device_(device), bytes_(bytes) {
  if (active_pool != nullptr && active_pool->device() == device) {
    pool_ = active_pool;
    rounded_ = CachingAllocator::RoundSize(bytes);
    ptr_ = pool_->Take(rounded_);
    return;
  }
  ptr_ = AllocatorFor(device).Allocate(bytes, &rounded_);
}

Buffer::~Buffer() {
  if (pool_ != nullptr) {
    pool_->Give(ptr_, rounded_);
    return;
  }
  AllocatorFor(device_).Release(ptr_, rounded_);
}

}  // namespace tvlab
