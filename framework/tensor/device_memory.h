#ifndef TVLAB_FRAMEWORK_TENSOR_DEVICE_MEMORY_H_
#define TVLAB_FRAMEWORK_TENSOR_DEVICE_MEMORY_H_

// Where tensor storage lives, and the raw memory operations of each place.
//
// Every tensor buffer belongs to one device's allocator. Host code may read a
// buffer only when it lives on the host (Tensor::data() checks); data moves
// between host and device only through the explicit copies below
// (Tensor::ToHost, Tensor::FromVector, Tensor::ToVector, DeviceInts), which
// the framework calls at its edges: loading batches, initialising and
// checkpointing parameters, reading losses and metrics, decoding output.
// docs/architecture.md lists those edges.
//
// A backend whose kernels run on another device registers that device's
// DeviceMemory once (RegisterDeviceMemory); the host's is built in. Every
// device gets a caching allocator on top (CachingAllocator), so steady-state
// training allocates nothing from the system.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tvlab {

enum class Device {
  kCpu,        // host memory; host code may read it
  kSimulated,  // the simulated device (backend simulated_device): host RAM behind
               // pointers the host cannot dereference
  kCuda,       // CUDA device memory
};
const char* DeviceName(Device device);

// Host blocks of at least this many bytes start on a 2 MiB boundary and are
// advised to the kernel as transparent huge pages (device_memory.cc,
// HostMemory).
constexpr size_t kHugePage = size_t{2} << 20;

// Raw, uncached memory of one device. Pointers it returns are opaque to host
// code unless device() is kCpu. Copies and fills are synchronous.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual Device device() const = 0;
  // Null when the device is out of memory.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
  virtual void CopyToHost(const void* src, void* host_dst, size_t bytes) = 0;
  virtual void CopyFromHost(const void* host_src, void* dst, size_t bytes) = 0;
  virtual void CopyOnDevice(const void* src, void* dst, size_t bytes) = 0;
  virtual void Fill(float* dst, int64_t n, float value) = 0;
};

// Byte counts of one device's caching allocator (metrics.json reports them).
struct AllocatorStats {
  int64_t in_use_bytes = 0;       // held by live tensors (rounded sizes)
  int64_t peak_in_use_bytes = 0;  // high-water mark of in_use_bytes
  int64_t cached_bytes = 0;       // freed by tensors, kept for reuse
  int64_t system_allocations = 0; // calls that reached DeviceMemory::Allocate
  int64_t cache_hits = 0;         // allocations served from the cache
};

// One device's allocator: sizes are rounded up to a size class (at most 1/8
// larger, and a multiple of 512 bytes), freed blocks are kept per class and
// handed out again. Thread-safe.
class CachingAllocator {
 public:
  explicit CachingAllocator(std::unique_ptr<DeviceMemory> memory);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Never null: when the device is full, the cache is released and the
  // allocation retried; if that fails too the process stops with the sizes
  // (validation's memory estimate is meant to refuse such specs earlier).
  void* Allocate(size_t bytes, size_t* rounded);
  void Release(void* ptr, size_t rounded);
  // Returns every cached block to the device.
  void EmptyCache();
  AllocatorStats Stats() const;
  void ResetPeak();
  // The device's memory operations; while a MemoryObserver is set on this
  // thread for this device (step capture), that observer's view of them.
  DeviceMemory& memory();
  // The live block (a Tensor's or a BufferPool's) that holds `ptr`, if any:
  // its start, its rounded size and a generation that no later block at the
  // same address shares. Scans every live block: for step capture's checks,
  // not for hot paths.
  struct LiveBlock {
    const void* begin = nullptr;
    size_t bytes = 0;
    uint64_t generation = 0;
  };
  bool FindLiveBlock(const void* ptr, LiveBlock* block) const;
  // Whether `block` is still live: not released since FindLiveBlock found it.
  bool StillLive(const LiveBlock& block) const;

  // The size class of a request.
  static size_t RoundSize(size_t bytes);

 private:
  struct State;
  std::unique_ptr<DeviceMemory> memory_;
  std::unique_ptr<State> state_;
};

// The allocator of `device`; stops the process if no backend registered it
// (a tensor on a device that this binary cannot reach).
CachingAllocator& AllocatorFor(Device device);
bool HasDeviceMemory(Device device);
// Registers the memory of a device (once per device; later calls are
// ignored and return false).
bool RegisterDeviceMemory(std::unique_ptr<DeviceMemory> memory);

// The device new tensors are created on: the active backend's (SetBackend
// keeps it in step).
Device CurrentDevice();
void SetCurrentDevice(Device device);

// Step capture (framework/capture/) observes the memory operations of one
// thread: while set, AllocatorFor(device).memory() on this thread returns
// `observer` (which forwards to the device's own DeviceMemory). Null clears.
void SetMemoryObserver(Device device, DeviceMemory* observer);

// A private pool of one device's memory (the CPU analogue of a CUDA graph's
// pool). While a ScopedBufferPool makes it active on a thread, new Buffers
// of its device come from it and go back to it, never to the caching
// allocator: the pool's blocks stay reserved for as long as it or any of its
// Buffers lives. Deterministic: a block is handed the lowest-numbered free
// block of its size class, so the same sequence of allocations and releases
// gets the same addresses every time it runs from an all-free pool.
class BufferPool {
 public:
  explicit BufferPool(Device device) : device_(device) {}
  ~BufferPool();  // returns its blocks to the device's allocator
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  Device device() const { return device_; }
  void* Take(size_t rounded);
  void Give(void* ptr, size_t rounded);
  // Blocks handed out and not given back; all blocks; their bytes.
  int64_t in_use() const { return in_use_; }
  int64_t blocks() const;
  int64_t bytes() const { return bytes_; }
  // Whether `ptr` points into one of the pool's blocks.
  bool Holds(const void* ptr) const;
  // The start of the block `ptr` points into (null: the pool holds none).
  const void* BlockStart(const void* ptr) const;
  // Called with a block's start each time one is taken (true) or given back
  // (false); step capture records a step's block lifetimes with it. Empty:
  // nobody is told.
  using Listener = std::function<void(const void* block, bool taken)>;
  void set_listener(Listener listener) { listener_ = std::move(listener); }

 private:
  struct Block {
    void* ptr;
    bool free;
  };
  Device device_;
  std::unordered_map<size_t, std::vector<Block>> by_size_;  // in creation order
  int64_t in_use_ = 0;
  int64_t bytes_ = 0;
  Listener listener_;
};

// Makes `pool` the source of new Buffers of its device on this thread for a
// scope (nested scopes restore the previous one).
class ScopedBufferPool {
 public:
  explicit ScopedBufferPool(std::shared_ptr<BufferPool> pool);
  ~ScopedBufferPool();
  ScopedBufferPool(const ScopedBufferPool&) = delete;
  ScopedBufferPool& operator=(const ScopedBufferPool&) = delete;

 private:
  std::shared_ptr<BufferPool> previous_;
};

// One allocation from a device's caching allocator (or from the thread's
// active BufferPool), returned to it when the last owner lets go. Tensors
// and DeviceInts share Buffers.
class Buffer {
 public:
  Buffer(Device device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Device device() const { return device_; }
  size_t bytes() const { return bytes_; }
  // Opaque unless device() is kCpu: pass it to a kernel or a copy.
  void* ptr() const { return ptr_; }

 private:
  Device device_;
  size_t bytes_;
  size_t rounded_;
  void* ptr_;
  std::shared_ptr<BufferPool> pool_;  // null: the device's allocator
};

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TENSOR_DEVICE_MEMORY_H_
