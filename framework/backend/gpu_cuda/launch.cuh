#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_LAUNCH_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_LAUNCH_CUH_

// TVLAB_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...): every
// kernel launch of gpu_cuda, spelled so that the same .cu file also runs on
// the CPU emulator (emulator/cuda_emulator.h, for tests without a GPU).
// Under nvcc it is exactly
//   kernel<<<grid, block, shared_bytes, stream>>>(args...);
// the kernel comes last so that a template argument list may hold commas.

#include <cuda_runtime.h>

#if defined(TVLAB_CUDA_EMULATOR)
#define TVLAB_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::cuda_emulator::Launcher(grid, block, shared_bytes, stream, __VA_ARGS__)
#else
#define TVLAB_LAUNCH(grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#endif

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_LAUNCH_CUH_
