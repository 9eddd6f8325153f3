// LayerNorm / RMSNorm. Forward and the dx part of backward: one block per
// row. dgamma / dbeta: column sums over rows, done as (chunk of 64+ rows) x
// (32 columns) tiles that write partials, then one thread per column adding
// its partials in chunk order (no atomics: the same result every run).

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/norm_kernels.h"

namespace tvlab {
namespace {

using cuda_util::BlockReduce;
using cuda_util::RowThreads;
using cuda_util::SumOp;

__global__ void NormalizeKernel(const float* x, const float* gamma, const float* beta, float* y,
                                float* mean, float* rstd, int64_t cols, float eps,
                                bool subtract_mean) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;  // (cols)
  float* yr = y + row * cols;
  float mu = 0.0f;
  if (subtract_mean) {
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += xr[c];
    mu = BlockReduce(sum, SumOp(), 0.0f) / static_cast<float>(cols);
  }
  float sq = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = xr[c] - mu;
    sq += d * d;
  }
  const float var = BlockReduce(sq, SumOp(), 0.0f) / static_cast<float>(cols);
  const float rs = 1.0f / sqrtf(var + eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = (xr[c] - mu) * rs;
    if (gamma) v *= gamma[c];
    if (beta) v += beta[c];
    yr[c] = v;
  }
}

// xhat = (x - mean) * rstd; g = dy * gamma.
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (LayerNorm)
// dx = rstd * (g - xhat * mean(g * xhat))             (RMSNorm)
// With an addend, dx = addend + that: __fadd_rn is never contracted into
// an FMA, so the addition rounds as Binary's does.
__global__ void NormalizeBackwardKernel(const float* x, const float* gamma, const float* mean,
                                        const float* rstd, const float* dy, const float* addend,
                                        float* dx, int64_t cols, bool subtract_mean) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  const float* dyr = dy + row * cols;
  const float mu = mean[row], rs = rstd[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (xr[c] - mu) * rs;
    const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
    sum_g += g;
    sum_gx += g * xhat;
  }
  const float mean_g =
      subtract_mean ? BlockReduce(sum_g, SumOp(), 0.0f) / static_cast<float>(cols) : 0.0f;
  const float mean_gx = BlockReduce(sum_gx, SumOp(), 0.0f) / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (xr[c] - mu) * rs;
    const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
    const float d = rs * (g - mean_g - xhat * mean_gx);
    dx[row * cols + c] = addend != nullptr ? __fadd_rn(addend[row * cols + c], d) : d;
  }
}

constexpr int kTileCols = 32;  // columns per block (one warp wide)
constexpr int kTileRows = 8;   // threads down the rows

// Rows per partial: 64, doubled until the chunks fit gridDim.y (65535).
int64_t ChunkRows(int64_t rows) {
  int64_t chunk_rows = 64;
  while ((rows + chunk_rows - 1) / chunk_rows > 65535) chunk_rows *= 2;
  return chunk_rows;
}
int64_t Chunks(int64_t rows) { return (rows + ChunkRows(rows) - 1) / ChunkRows(rows); }

// grid (ceil(cols / 32), chunks), block (32, 8). partial_g / partial_b are
// (chunks, cols); either may be null when its gradient is not wanted.
__global__ void ParamGradPartialKernel(const float* x, const float* mean, const float* rstd,
                                       const float* dy, int64_t rows, int64_t cols,
                                       int64_t chunk_rows, float* partial_g, float* partial_b) {
  __shared__ float tile_g[kTileRows][kTileCols + 1];
  __shared__ float tile_b[kTileRows][kTileCols + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kTileCols + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  float sg = 0.0f, sb = 0.0f;
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) {
      const float d = dy[r * cols + c];
      sg += d * (x[r * cols + c] - mean[r]) * rstd[r];
      sb += d;
    }
  }
  tile_g[threadIdx.y][threadIdx.x] = sg;
  tile_b[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int i = 1; i < kTileRows; ++i) {
      sg += tile_g[i][threadIdx.x];
      sb += tile_b[i][threadIdx.x];
    }
    if (partial_g) partial_g[blockIdx.y * cols + c] = sg;
    if (partial_b) partial_b[blockIdx.y * cols + c] = sb;
  }
}

__global__ void ParamGradFinishKernel(const float* partial, int64_t chunks, int64_t cols,
                                      float* grad) {
  const int64_t c = cuda_util::GlobalIndex();
  if (c >= cols) return;
  float sum = 0.0f;
  for (int64_t k = 0; k < chunks; ++k) sum += partial[k * cols + c];
  grad[c] += sum;
}

}  // namespace

int LaunchNormalize(const float* x, const float* gamma, const float* beta, float* y,
                    float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                    bool subtract_mean) {
  if (rows <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(static_cast<unsigned>(rows), RowThreads(cols), 0, 0, NormalizeKernel)(
      x, gamma, beta, y, mean, rstd, cols, eps, subtract_mean);
  return static_cast<int>(cudaGetLastError());
}

size_t NormalizeBackwardScratchBytes(int64_t rows, int64_t cols) {
  return static_cast<size_t>(2 * Chunks(rows) * cols) * sizeof(float);
}

int LaunchNormalizeBackward(const float* x, const float* gamma, const float* mean,
                            const float* rstd, const float* dy, const float* addend, float* dx,
                            float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                            bool subtract_mean, void* scratch) {
  if (rows <= 0 || cols <= 0) return 0;
  TVLAB_LAUNCH(static_cast<unsigned>(rows), RowThreads(cols), 0, 0, NormalizeBackwardKernel)(
      x, gamma, mean, rstd, dy, addend, dx, cols, subtract_mean);
  if (dgamma || dbeta) {
    const int64_t chunks = Chunks(rows);
    float* partial_g = dgamma ? static_cast<float*>(scratch) : nullptr;
    float* partial_b = dbeta ? static_cast<float*>(scratch) + chunks * cols : nullptr;
    const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols),
                    static_cast<unsigned>(chunks));
    TVLAB_LAUNCH(grid, dim3(kTileCols, kTileRows), 0, 0, ParamGradPartialKernel)(
        x, mean, rstd, dy, rows, cols, ChunkRows(rows), partial_g, partial_b);
    const unsigned blocks =
        static_cast<unsigned>((cols + cuda_util::kThreads - 1) / cuda_util::kThreads);
    if (dgamma)
      TVLAB_LAUNCH(blocks, cuda_util::kThreads, 0, 0, ParamGradFinishKernel)(
          partial_g, chunks, cols, dgamma);
    if (dbeta)
      TVLAB_LAUNCH(blocks, cuda_util::kThreads, 0, 0, ParamGradFinishKernel)(
          partial_b, chunks, cols, dbeta);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace tvlab
