// Deterministic reductions: ReduceSumTo (the backward of broadcasting, e.g.
// a bias gradient (B*T, C) -> (C)) and SumSquares (the global gradient norm).
// Pass 1 writes per-chunk partial sums in double to scratch; pass 2 adds each
// output's partials in chunk order. The chunking depends only on the sizes,
// so the same inputs give bitwise the same result on every run.

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/reduction_kernels.h"

namespace tvlab {
namespace {

using cuda_util::BlockReduce;
using cuda_util::GlobalIndex;
using cuda_util::GridStride;
using cuda_util::kThreads;
using cuda_util::SumOp;

// ReduceSumTo: reduced values per chunk (one thread sums one chunk of one
// output), and the most chunks per output.
constexpr int64_t kReduceChunk = 256;
constexpr int64_t kMaxReduceChunks = 1024;

int64_t ReduceChunks(int64_t n_reduced) {
  const int64_t chunks = (n_reduced + kReduceChunk - 1) / kReduceChunk;
  return chunks < 1 ? 1 : (chunks > kMaxReduceChunks ? kMaxReduceChunks : chunks);
}

// Offset in x of output o's first value.
// (o < n_out and r < n_reduced, so the outermost coordinate needs no modulo.)
__device__ __forceinline__ int64_t KeptOffset(const ReduceIndex& ix, int64_t o) {
  int64_t offset = 0;
  for (int d = ix.kept_rank - 1; d > 0; --d) {
    offset += (o % ix.kept_size[d]) * ix.kept_stride[d];
    o /= ix.kept_size[d];
  }
  return ix.kept_rank > 0 ? offset + o * ix.kept_stride[0] : 0;
}

__device__ __forceinline__ int64_t ReducedOffset(const ReduceIndex& ix, int64_t r) {
  int64_t offset = 0;
  for (int d = ix.reduced_rank - 1; d > 0; --d) {
    offset += (r % ix.reduced_size[d]) * ix.reduced_stride[d];
    r /= ix.reduced_size[d];
  }
  return ix.reduced_rank > 0 ? offset + r * ix.reduced_stride[0] : 0;
}

// grid (ceil(n_out / kThreads), chunks): thread (o, chunk) sums the reduced
// indices [chunk * per_chunk, (chunk + 1) * per_chunk) of output o. With one
// chunk it writes out directly, else partial[chunk * n_out + o].
__global__ void ReducePartialKernel(const float* x, ReduceIndex ix, int64_t n_out,
                                    int64_t n_reduced, int64_t per_chunk, double* partial,
                                    float* out) {
  const int64_t o = GlobalIndex();
  if (o >= n_out) return;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * per_chunk;
  const int64_t end = begin + per_chunk < n_reduced ? begin + per_chunk : n_reduced;
  const float* xo = x + KeptOffset(ix, o);
  double sum = 0.0;
  for (int64_t r = begin; r < end; ++r) sum += xo[ReducedOffset(ix, r)];
  if (gridDim.y == 1)
    out[o] = static_cast<float>(sum);
  else
    partial[chunk * n_out + o] = sum;
}

__global__ void ReduceFinishKernel(const double* partial, int64_t chunks, int64_t n_out,
                                   float* out) {
  const int64_t o = GlobalIndex();
  if (o >= n_out) return;
  double sum = 0.0;
  for (int64_t c = 0; c < chunks; ++c) sum += partial[c * n_out + o];
  out[o] = static_cast<float>(sum);
}

// SumSquares: pass 1 over a fixed grid (a function of n), one partial per
// block; pass 2 is one block over the partials.
constexpr int kSquaresBlocks = 1024;

int SquaresBlocks(int64_t n) {
  const int64_t wanted = (n + 4 * kThreads - 1) / (4 * kThreads);
  return static_cast<int>(wanted < 1 ? 1 : (wanted > kSquaresBlocks ? kSquaresBlocks : wanted));
}

__global__ void SquaresPartialKernel(const float* x, int64_t n, double* partial) {
  double sum = 0.0;
  for (int64_t i = GlobalIndex(); i < n; i += GridStride()) {
    const double v = x[i];
    sum += v * v;
  }
  sum = BlockReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void SquaresFinishKernel(const double* partial, int blocks, double* acc) {
  double sum = 0.0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) sum += partial[i];
  sum = BlockReduce(sum, SumOp(), 0.0);
  if (threadIdx.x == 0) acc[0] += sum;
}

}  // namespace

size_t ReduceSumToScratchBytes(int64_t n_out, int64_t n_reduced) {
  const int64_t chunks = ReduceChunks(n_reduced);
  return chunks == 1 ? 0 : static_cast<size_t>(chunks * n_out) * sizeof(double);
}

int LaunchReduceSumTo(const float* x, const ReduceIndex& index, int64_t n_out,
                      int64_t n_reduced, float* out, void* scratch) {
  if (n_out <= 0) return 0;
  const int64_t chunks = ReduceChunks(n_reduced);
  const int64_t per_chunk = (n_reduced + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((n_out + kThreads - 1) / kThreads),
                  static_cast<unsigned>(chunks));
  double* partial = static_cast<double*>(scratch);
  TVLAB_LAUNCH(grid, kThreads, 0, 0, ReducePartialKernel)(x, index, n_out, n_reduced, per_chunk,
                                                          partial, out);
  if (chunks > 1) {
    TVLAB_LAUNCH(static_cast<unsigned>((n_out + kThreads - 1) / kThreads), kThreads, 0, 0,
                 ReduceFinishKernel)(partial, chunks, n_out, out);
  }
  return static_cast<int>(cudaGetLastError());
}

size_t SumSquaresScratchBytes(int64_t n) {
  return static_cast<size_t>(SquaresBlocks(n)) * sizeof(double);
}

int LaunchSumSquares(const float* x, int64_t n, double* acc, void* scratch) {
  if (n <= 0) return 0;
  const int blocks = SquaresBlocks(n);
  double* partial = static_cast<double*>(scratch);
  TVLAB_LAUNCH(blocks, kThreads, 0, 0, SquaresPartialKernel)(x, n, partial);
  TVLAB_LAUNCH(1, 1024, 0, 0, SquaresFinishKernel)(partial, blocks, acc);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
