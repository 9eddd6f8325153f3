#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_EMULATOR_CUDA_EMULATOR_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_EMULATOR_CUDA_EMULATOR_H_

// CUDA's execution model on the CPU, for tests only: the GPU backend's very
// sources (gpu_cuda/*.cu kernels and launchers, gpu_cuda/*.cc host code)
// compiled by the host compiler against the headers of include/ (a
// cuda_runtime.h, cuda_bf16.h, mma.h and cublas_v2.h of our own), so that
// they run, and are tested against the reference backend, on a machine
// without a GPU (docs/gpu.md, "Tests without a GPU: the CPU emulator").
//
// How a launch runs: the blocks of the grid one after another; the threads
// of a block as fibers on the calling OS thread, switched only at
// __syncthreads, __syncwarp and warp shuffles. A barrier that some threads
// never reach (one that exited, or waits elsewhere) is reported as a
// deadlock, not hidden. `__shared__` variables are function statics (one
// block runs at a time); dynamic shared memory is a NaN-filled buffer per
// block, so a read before any write shows. Device memory is host memory
// from cudaMalloc, tracked: a copy or a cuBLAS operand outside every
// allocation is an error, as is a launch that breaks CUDA's limits (block
// size, grid size, dynamic shared memory above 48 KiB without
// cudaFuncSetAttribute, above the device's opt-in maximum). The device it
// describes is an H200 (compute capability 9.0, 227 KiB of opt-in shared
// memory per block).
//
// What it cannot check is left to tools/gpu_check.sh on a real GPU: nvcc's
// code generation, register limits (__launch_bounds__), timing, and races
// beyond what running the same tests in the reversed order finds
// (SetReversedSchedule: fibers run in one fixed order between barriers).
//
// Not thread-safe: one launch at a time, on the thread that makes it.

#include <math.h>  // CUDA's device math (expf, sqrtf, fmaxf, ...) in the global namespace

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>

#define TVLAB_CUDA_EMULATOR 1

// --- Declaration specifiers ---------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

// Dynamic shared memory, as gpu_cuda's kernels name it (their nvcc spelling
// is `extern __shared__ ... name[]`).
#define TVLAB_DYNAMIC_SHARED_FLOATS(name) \
  float* name = static_cast<float*>(::cuda_emulator::DynamicShared())
#define TVLAB_DYNAMIC_SHARED_BYTES(name) \
  unsigned char* name = static_cast<unsigned char*>(::cuda_emulator::DynamicShared())

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct uint3 {
  unsigned x, y, z;
};

// The built-in variables of the thread that is running.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;

struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace cuda_emulator {

// Runs `thread_body` for every thread of every block of `grid` x `block`
// with `shared_bytes` of dynamic shared memory. `kernel` identifies the
// kernel for its cudaFuncSetAttribute limit. Returns the launch's error
// (cudaSuccess, a configuration error, or cudaErrorLaunchFailure for a
// deadlock, with the reason in LastFailure()).
cudaError_t Run(dim3 grid, dim3 block, size_t shared_bytes, const void* kernel,
                const std::function<void()>& thread_body);

// The running block's dynamic shared memory (null outside a launch).
void* DynamicShared();
// Its size in bytes.
size_t DynamicSharedBytes();

// Records `err` as the sticky error cudaGetLastError returns (once).
void SetLastError(cudaError_t err);

// Why the last failed launch or API call failed, in words ("" if none).
const std::string& LastFailure();

// Whether `ptr` .. `ptr + bytes` lies inside one live cudaMalloc allocation.
bool IsDeviceRange(const void* ptr, size_t bytes);
// Live cudaMalloc allocations (to check a test frees what it allocates).
int64_t LiveAllocations();

// Fiber switches at barriers and shuffles.
void BlockBarrier();
void WarpBarrier();
// Two exchange slots per lane of the current warp, alternating by barrier
// generation (see WarpExchange in the .cc).
uint64_t* WarpSlots();
int LaneId();

// Runs the blocks of a grid, and the threads of a block between barriers,
// last to first instead of first to last. Both orders are schedules a GPU
// may take, so a kernel whose result depends on which one ran has a race:
// a read of shared or global memory that another thread writes without a
// barrier in between (emulator/reversed_schedule.cc turns this on for a
// whole test binary).
void SetReversedSchedule(bool reversed);

// Whether fibers can run here (x86-64; elsewhere every launch fails with
// a message that says so).
bool Available();

// The launch behind TVLAB_LAUNCH: kernel arguments are copied into each
// thread's parameters, as a real launch copies them.
template <typename... Params>
auto Launcher(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t /*stream*/,
              void (*kernel)(Params...)) {
  return [=](auto&&... args) {
    const std::function<void()> body = [&] { kernel(args...); };
    SetLastError(Run(grid, block, shared_bytes, reinterpret_cast<const void*>(kernel), body));
  };
}

// One value of a warp shuffle.
template <typename T>
T Shuffle(T value, int source_lane, int width) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value,
                "shuffles move values of up to 8 bytes");
  uint64_t* slots = WarpSlots();
  const int lane = LaneId();
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  slots[lane] = bits;
  WarpBarrier();
  const int base = lane & ~(width - 1);
  const int source = base + (source_lane & (width - 1));
  T out;
  std::memcpy(&out, &slots[source], sizeof(T));
  return out;
}

}  // namespace cuda_emulator

// --- Device built-ins ---------------------------------------------------------
inline void __syncthreads() { cuda_emulator::BlockBarrier(); }
inline void __syncwarp(unsigned /*mask*/ = 0xffffffffu) { cuda_emulator::WarpBarrier(); }

template <typename T>
T __shfl_sync(unsigned /*mask*/, T value, int source_lane, int width = 32) {
  return cuda_emulator::Shuffle(value, source_lane, width);
}
template <typename T>
T __shfl_xor_sync(unsigned /*mask*/, T value, int lane_mask, int width = 32) {
  const int lane = cuda_emulator::LaneId();
  const int target = lane ^ lane_mask;
  // Outside the width-lane segment CUDA returns the caller's own value.
  return cuda_emulator::Shuffle(
      value, (target & ~(width - 1)) == (lane & ~(width - 1)) ? target : lane, 32);
}
template <typename T>
T __shfl_down_sync(unsigned /*mask*/, T value, unsigned delta, int width = 32) {
  const int lane = cuda_emulator::LaneId();
  const int in_segment = lane & (width - 1);
  const int source =
      in_segment + static_cast<int>(delta) < width ? lane + static_cast<int>(delta) : lane;
  return cuda_emulator::Shuffle(value, source, 32);
}

// Atomics: one fiber runs at a time and switches only at barriers, so a
// plain read-modify-write is atomic here.
template <typename T>
T atomicAdd(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}

// Round-to-nearest float arithmetic that nvcc never contracts into an FMA;
// on the host (baseline x86-64, no FMA) plain operations.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }

inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<uint64_t>(a) * b) >> 32);
}

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_EMULATOR_CUDA_EMULATOR_H_
