// The CPU emulator of cuda_emulator.h: fibers, barriers, launches, and the
// runtime calls of include/cuda_runtime.h over tracked host memory.

#include "framework/backend/gpu_cuda/emulator/cuda_emulator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <vector>

#include "framework/backend/gpu_cuda/emulator/include/cuda_runtime.h"
#include "framework/backend/gpu_cuda/emulator/include/mma.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define TVLAB_EMULATOR_ASAN 1
#else
#define TVLAB_EMULATOR_ASAN 0
#endif

uint3 threadIdx = {0, 0, 0};
uint3 blockIdx = {0, 0, 0};
dim3 blockDim;
dim3 gridDim;

#if defined(__x86_64__)
// EmulatorSwitch(&from_sp, to_sp): pushes the callee-saved registers, saves
// the stack pointer in *from_sp, switches to to_sp and pops its registers
// (System V ABI: everything else is caller-saved across a call). About 100x
// cheaper than swapcontext, which makes a signal-mask syscall per switch.
extern "C" void EmulatorSwitch(void** from_sp, void* to_sp);
asm(R"(
  .text
  .globl EmulatorSwitch
  .type EmulatorSwitch, @function
EmulatorSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size EmulatorSwitch, .-EmulatorSwitch
)");
#define TVLAB_EMULATOR_FIBERS 1
#else
#define TVLAB_EMULATOR_FIBERS 0
extern "C" inline void EmulatorSwitch(void**, void*) {}
#endif

namespace cuda_emulator {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kMaxWarps = kMaxThreads / 32;
constexpr size_t kStackBytes = 256 * 1024;  // the attention kernels keep tiles in registers
constexpr size_t kDefaultSharedBytes = 48 * 1024;
constexpr int kOptInSharedBytes = 232448;  // H200: 227 KiB per block
constexpr int kComputeCapabilityMajor = 9, kComputeCapabilityMinor = 0;

struct Barrier {
  int arrived = 0;
  int64_t generation = 0;
};

struct Fiber {
  void* sp = nullptr;     // saved stack pointer while switched out
  char* stack = nullptr;  // kStackBytes, mapped once, reused by every launch
  bool done = false;
  void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
};

struct State {
  Fiber fibers[kMaxThreads];
  int threads = 0;  // of the running block
  int current = 0;  // the running fiber
  void* scheduler_sp = nullptr;
  const void* scheduler_stack_bottom = nullptr;
  size_t scheduler_stack_size = 0;
  int64_t progress = 0;  // barrier arrivals: a round without any is a deadlock
  Barrier block_barrier;
  Barrier warp_barriers[kMaxWarps];
  // Two slot sets per warp, alternating by barrier generation: a lane writes
  // shuffle n + 2's value only after every lane passed shuffle n + 1's
  // barrier, so after every lane read shuffle n's.
  uint64_t warp_slots[kMaxWarps][2][32];
  const std::function<void()>* body = nullptr;
  std::vector<unsigned char> shared;  // dynamic shared memory of the running block
  size_t shared_bytes = 0;
  bool running = false;
  bool reversed = false;  // SetReversedSchedule
  cudaError_t last_error = cudaSuccess;
  std::string failure;
  std::string wmma_error;
  std::map<const void*, int> shared_limits;  // cudaFuncSetAttribute, per kernel
  std::map<uintptr_t, size_t> allocations;   // cudaMalloc: start -> bytes
};

State& S() {
  static State* state = new State();  // never destroyed: tests may launch from static teardown
  return *state;
}

void SwitchToScheduler(bool finished) {
  State& s = S();
  Fiber& f = s.fibers[s.current];
#if TVLAB_EMULATOR_ASAN
  __sanitizer_start_switch_fiber(finished ? nullptr : &f.fake_stack, s.scheduler_stack_bottom,
                                 s.scheduler_stack_size);
#else
  (void)finished;
#endif
  EmulatorSwitch(&f.sp, s.scheduler_sp);
#if TVLAB_EMULATOR_ASAN
  __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

void FiberMain() {
  State& s = S();
#if TVLAB_EMULATOR_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &s.scheduler_stack_bottom, &s.scheduler_stack_size);
#endif
  (*s.body)();
  s.fibers[s.current].done = true;
  SwitchToScheduler(/*finished=*/true);  // never resumed
}

void Wait(Barrier& barrier, int count) {
  State& s = S();
  const int64_t generation = barrier.generation;
  ++s.progress;
  if (++barrier.arrived == count) {
    barrier.arrived = 0;
    ++barrier.generation;
    return;
  }
  while (barrier.generation == generation) SwitchToScheduler(/*finished=*/false);
}

int LinearThread() {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

int WarpSize(int warp) { return std::min(32, S().threads - warp * 32); }

std::string DimString(dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

cudaError_t Fail(cudaError_t err, const std::string& why) {
  S().failure = why;
  return err;
}

// Why the launch breaks CUDA's limits (on an H200), or "".
std::string ConfigurationError(dim3 grid, dim3 block, size_t shared_bytes, const void* kernel) {
  const int64_t threads = int64_t{block.x} * block.y * block.z;
  if (threads == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
    return "an empty launch: grid " + DimString(grid) + ", block " + DimString(block);
  if (threads > kMaxThreads || block.x > 1024 || block.y > 1024 || block.z > 64)
    return "a block of " + DimString(block) + " threads (at most 1024 in all; z at most 64)";
  if (grid.y > 65535 || grid.z > 65535)
    return "a grid of " + DimString(grid) + " blocks (y and z at most 65535)";
  auto limit = S().shared_limits.find(kernel);
  const size_t allowed =
      limit == S().shared_limits.end() ? kDefaultSharedBytes : static_cast<size_t>(limit->second);
  if (shared_bytes > allowed)
    return std::to_string(shared_bytes) + " bytes of dynamic shared memory, above the kernel's " +
           std::to_string(allowed) + " (cudaFuncSetAttribute raises it up to " +
           std::to_string(kOptInSharedBytes) + ")";
  return "";
}

cudaError_t RunBlock(int64_t block_index, int threads) {
  State& s = S();
  std::fill(s.shared.begin(), s.shared.end(), 0xff);  // NaN as floats: a read before a write shows
  s.block_barrier = Barrier();
  for (Barrier& b : s.warp_barriers) b = Barrier();
  for (int t = 0; t < threads; ++t) {
    Fiber& f = s.fibers[t];
    if (f.stack == nullptr) {
      void* mem = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (mem == MAP_FAILED) return Fail(cudaErrorMemoryAllocation, "no memory for a fiber stack");
      f.stack = static_cast<char*>(mem);
    }
    f.done = false;
    f.fake_stack = nullptr;
    // A fresh stack that EmulatorSwitch "returns" into FiberMain from: six
    // zero registers, FiberMain's address, a dummy return address; the top
    // is 16-byte aligned so FiberMain starts with the ABI's alignment.
    uintptr_t top = reinterpret_cast<uintptr_t>(f.stack + kStackBytes);
    top &= ~uintptr_t{15};
    void** sp = reinterpret_cast<void**>(top) - 8;
    for (int r = 0; r < 6; ++r) sp[r] = nullptr;
    sp[6] = reinterpret_cast<void*>(&FiberMain);
    sp[7] = nullptr;
    f.sp = sp;
  }
  for (;;) {
    bool all_done = true, any_finished = false;
    const int64_t progress = s.progress;
    for (int i = 0; i < threads; ++i) {
      const int t = s.reversed ? threads - 1 - i : i;
      Fiber& f = s.fibers[t];
      if (f.done) continue;
      s.current = t;
      threadIdx.x = static_cast<unsigned>(t) % blockDim.x;
      threadIdx.y = static_cast<unsigned>(t) / blockDim.x % blockDim.y;
      threadIdx.z = static_cast<unsigned>(t) / (blockDim.x * blockDim.y);
#if TVLAB_EMULATOR_ASAN
      void* fake = nullptr;
      __sanitizer_start_switch_fiber(&fake, f.stack, kStackBytes);
#endif
      EmulatorSwitch(&s.scheduler_sp, f.sp);
#if TVLAB_EMULATOR_ASAN
      __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
      any_finished |= f.done;
      all_done &= f.done;
    }
    if (all_done) return cudaSuccess;
    if (!any_finished && s.progress == progress) {
      int exited = 0;
      for (int t = 0; t < threads; ++t) exited += s.fibers[t].done;
      return Fail(cudaErrorLaunchFailure, "deadlock in block " + std::to_string(block_index) +
                                              ": " + std::to_string(threads - exited) + " of " +
                                              std::to_string(threads) +
                                              " threads wait at a barrier that the others (" +
                                              std::to_string(exited) + " exited) never reach");
    }
  }
}

}  // namespace

bool Available() { return TVLAB_EMULATOR_FIBERS; }

void SetReversedSchedule(bool reversed) { S().reversed = reversed; }

cudaError_t Run(dim3 grid, dim3 block, size_t shared_bytes, const void* kernel,
                const std::function<void()>& thread_body) {
  State& s = S();
  if (!Available()) return Fail(cudaErrorLaunchFailure, "the CUDA emulator's fibers need x86-64");
  if (s.running) return Fail(cudaErrorLaunchFailure, "a kernel launched from inside a kernel");
  if (std::string why = ConfigurationError(grid, block, shared_bytes, kernel); !why.empty())
    return Fail(
        shared_bytes > kDefaultSharedBytes ? cudaErrorInvalidValue : cudaErrorInvalidConfiguration,
        "launch of " + why);
  const int threads = static_cast<int>(block.x * block.y * block.z);
  s.running = true;
  s.threads = threads;
  s.body = &thread_body;
  // 128-byte aligned like a GPU's shared memory window (vector size is
  // rounded up so that data() + offset arithmetic stays inside).
  s.shared.assign(shared_bytes + 128, 0);
  s.shared_bytes = shared_bytes;
  blockDim = block;
  gridDim = grid;
  cudaError_t result = cudaSuccess;
  const int64_t blocks = int64_t{grid.x} * grid.y * grid.z;
  for (int64_t i = 0; i < blocks && result == cudaSuccess; ++i) {
    const int64_t index = s.reversed ? blocks - 1 - i : i;
    blockIdx = {static_cast<unsigned>(index % grid.x),
                static_cast<unsigned>(index / grid.x % grid.y),
                static_cast<unsigned>(index / (int64_t{grid.x} * grid.y))};
    result = RunBlock(index, threads);
  }
  s.running = false;
  s.body = nullptr;
  return result;
}

void* DynamicShared() {
  State& s = S();
  if (!s.running || s.shared_bytes == 0) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(s.shared.data());
  return reinterpret_cast<void*>((base + 127) & ~uintptr_t{127});
}

size_t DynamicSharedBytes() { return S().running ? S().shared_bytes : 0; }

void SetLastError(cudaError_t err) {
  if (err != cudaSuccess && S().last_error == cudaSuccess) S().last_error = err;
}

const std::string& LastFailure() { return S().failure; }

void BlockBarrier() { Wait(S().block_barrier, S().threads); }

void WarpBarrier() {
  const int warp = LinearThread() / 32;
  Wait(S().warp_barriers[warp], WarpSize(warp));
}

uint64_t* WarpSlots() {
  const int warp = LinearThread() / 32;
  return S().warp_slots[warp][S().warp_barriers[warp].generation & 1];
}

int LaneId() { return LinearThread() % 32; }

bool IsDeviceRange(const void* ptr, size_t bytes) {
  const auto& a = S().allocations;
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = a.upper_bound(p);
  if (it == a.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

int64_t LiveAllocations() { return static_cast<int64_t>(S().allocations.size()); }

const std::string& WmmaError() { return S().wmma_error; }
void ClearWmmaError() { S().wmma_error.clear(); }
void RecordWmmaError(const std::string& error) {
  if (S().wmma_error.empty()) S().wmma_error = error;
}

}  // namespace cuda_emulator

// --- The runtime API ------------------------------------------------------------
namespace {

using cuda_emulator::Fail;
using cuda_emulator::IsDeviceRange;

// Checks that the device side(s) of a copy lie inside allocations.
cudaError_t CheckCopy(void* dst, const void* src, size_t dst_bytes, size_t src_bytes,
                      cudaMemcpyKind kind, const char* call) {
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (dst_device && !IsDeviceRange(dst, dst_bytes))
    return Fail(cudaErrorInvalidValue,
                std::string(call) + ": the destination is not inside one device allocation");
  if (src_device && !IsDeviceRange(src, src_bytes))
    return Fail(cudaErrorInvalidValue,
                std::string(call) + ": the source is not inside one device allocation");
  return cudaSuccess;
}

cudaError_t Sticky(cudaError_t err) {
  cuda_emulator::SetLastError(err);
  return err;
}

}  // namespace

cudaError_t cudaGetLastError() {
  auto& s = cuda_emulator::S();
  const cudaError_t err = s.last_error;
  s.last_error = cudaSuccess;
  return err;
}

cudaError_t cudaPeekAtLastError() { return cuda_emulator::S().last_error; }

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument (emulator)";
    case cudaErrorMemoryAllocation:
      return "out of memory (emulator)";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument (emulator)";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer (emulator)";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (emulator)";
  }
  return "unknown error (emulator)";
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  if (device != 0) return Sticky(Fail(cudaErrorInvalidValue, "cudaGetDeviceProperties: one device"));
  std::snprintf(properties->name, sizeof(properties->name), "%s", "CUDA emulator");
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess
                     : Sticky(Fail(cudaErrorInvalidValue, "cudaSetDevice: one device"));
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return Sticky(Fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: one device"));
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = cuda_emulator::kMaxThreads;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(cuda_emulator::kDefaultSharedBytes);
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = cuda_emulator::kComputeCapabilityMajor;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = cuda_emulator::kComputeCapabilityMinor;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = cuda_emulator::kOptInSharedBytes;
      return cudaSuccess;
  }
  return Sticky(
      Fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: an attribute the emulator lacks"));
}

// Every launch ran to completion when it returned: nothing to wait for.
cudaError_t cudaDeviceSynchronize() { return cuda_emulator::S().last_error; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cuda_emulator::S().last_error; }

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  // 256-byte aligned, as cudaMalloc's are; at least one byte so the
  // allocation has an address of its own.
  const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded);
  if (p == nullptr)
    return Sticky(Fail(cudaErrorMemoryAllocation, "cudaMalloc: out of host memory"));
  // Fresh device memory holds garbage: NaN bytes, so a kernel that reads
  // what nobody wrote shows it.
  std::memset(p, 0xff, rounded);
  cuda_emulator::S().allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto& a = cuda_emulator::S().allocations;
  auto it = a.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == a.end())
    return Sticky(
        Fail(cudaErrorInvalidDevicePointer, "cudaFree of a pointer cudaMalloc did not return"));
  a.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (cudaError_t err = CheckCopy(dst, src, bytes, bytes, kind, "cudaMemcpy"); err != cudaSuccess)
    return Sticky(err);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > dpitch || width > spitch)
    return Sticky(Fail(cudaErrorInvalidValue, "cudaMemcpy2D: a width wider than a pitch"));
  const size_t dst_bytes = dpitch * (height - 1) + width, src_bytes = spitch * (height - 1) + width;
  if (cudaError_t err = CheckCopy(dst, src, dst_bytes, src_bytes, kind, "cudaMemcpy2D");
      err != cudaSuccess)
    return Sticky(err);
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                 width);
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!IsDeviceRange(ptr, bytes))
    return Sticky(Fail(cudaErrorInvalidValue, "cudaMemset: not inside one device allocation"));
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t) {
  return cudaMemset(ptr, value, bytes);
}

cudaError_t cudaFuncSetAttributeOf(const void* kernel, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > cuda_emulator::kOptInSharedBytes)
    return Sticky(
        Fail(cudaErrorInvalidValue, "cudaFuncSetAttribute: a dynamic shared memory size of " +
                                        std::to_string(value) + " bytes (at most " +
                                        std::to_string(cuda_emulator::kOptInSharedBytes) + ")"));
  cuda_emulator::S().shared_limits[kernel] = value;
  return cudaSuccess;
}
