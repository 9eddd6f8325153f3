#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_DEVICE_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_DEVICE_CUH_

// Fused attention on the GPU, flash-attention-2 style, in fp32 (Dao, 2023):
// no (T, S) matrix is ever written; the forward keeps a running max and sum
// per query row (online softmax) and saves the row's log-sum-exp; the
// backward recomputes the weights from it, tile by tile.
//
// Legend (fused_attention_kernel.h): B, H query heads, G kv heads, T
// queries, S keys, hs (q, k), hs_v (v, out); group = H / G; query head h
// reads kv head g = h / group by index (GQA/MQA without copies).
//
// Work split. Every kernel uses blocks of kWarps = 4 warps. A warp owns
// kRowsPerWarp = 4 "rows" (query rows in the forward and dQ kernels, key
// rows in the dK/dV kernel), and its 32 lanes sweep a 32-wide tile of the
// other side (keys, resp. queries): lane j computes the logit of row r with
// column j, so a softmax step over the tile is a warp reduction (shuffles).
// The output accumulators of a row are spread over the lanes: lane owns
// output columns col0 + lane + 32 * x, x < kDimsPerLane (templated: 1, 2, 4,
// 8 cover 32, 64, 128, 256 columns; wider outputs run the kernel once per
// 256-column window `col0`, recomputing the logits, so any size works).
//
// Shared memory. The 32-wide tile of the swept side is staged in shared
// memory with rows padded to hs + 1 floats: lane j reads row j, column c,
// and a pitch of hs + 1 puts consecutive lanes in distinct banks. The owned
// rows are staged unpadded (every lane reads the same address: a broadcast).
//
// Masks, ALiBi, a bucketed bias, the soft-cap and dropout are computed in the tile from the
// params, never materialised; a sink is where each row's online softmax
// starts (its max and sum), so the backward needs only the saved lse. Dropout uses philox.cuh with the CPU's element indexing:
// element (b, h, i, j) of the (B, H, T, S) weights, word e / 2, half e % 2.
//
// Backward without races: dK/dV are accumulated by one block per
// (b, kv head g, tile of 16 keys), which loops over the group's query heads
// and over the queries, so no two blocks write the same dK/dV row and no
// atomics are needed; the sums are also deterministic (same order every
// run, which resume-exactness relies on). dQ is a second kernel shaped like
// the forward (one block per (b, h, query tile), looping over key tiles).
// The price is computing the logits twice in the backward (once per
// kernel) instead of FA2's atomicAdd on dQ; for MQA, atomics on one shared
// dK/dV head would also contend across all H heads.

// This file holds what the kernels share: the work split's constants, warp
// reductions, the mask, ALiBi and dropout of one weight, staging rows into
// shared memory, and the two products every kernel makes (owned rows against
// the lane's row of a tile; shuffled coefficients times a tile's columns).
// The kernels are in fused_attention_forward.cuh and
// fused_attention_backward.cuh; fused_attention_kernel.cu launches them.
// They use nothing but CUDA's built-ins (threadIdx, blockIdx,
// __syncthreads, __shfl_sync, __shfl_xor_sync, expf, logf, tanhf, fmaxf) and the
// dynamic shared memory named through TVLAB_DYNAMIC_SHARED_FLOATS, so that
// the CPU emulator (emulator/cuda_emulator.h: one fiber per thread) runs
// these very kernels against the reference backend without a GPU.

#include <cmath>
#include <cstdint>

#include "framework/backend/gpu_cuda/fused_attention_kernel.h"
#include "framework/backend/gpu_cuda/philox.cuh"

#ifndef TVLAB_DYNAMIC_SHARED_FLOATS
#define TVLAB_DYNAMIC_SHARED_FLOATS(name) extern __shared__ float name[]
#endif

namespace tvlab {
namespace cuda {
namespace fused {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;  // owned rows per block: 16
constexpr int kTile = 32;                             // swept columns per step: one per lane
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ int64_t Min64(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t Max64(int64_t a, int64_t b) { return a > b ? a : b; }

__device__ __forceinline__ float WarpMax(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, o));
  return x;
}

__device__ __forceinline__ float WarpSum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
  return x;
}

// Keys [VisibleBegin, VisibleEnd) may be visible to query i of batch row b;
// none outside (FusedAttentionDesc's, attention_mask.h). Both non-decreasing
// in i; VisibleBegin is 0 without a window or documents.
__device__ __forceinline__ int64_t VisibleBegin(const FusedAttentionParams& p, int64_t b,
                                                int64_t i) {
  int64_t begin = p.window > 0 ? Max64(p.causal_offset + i - p.window + 1, 0) : 0;
  if (p.document_begin != nullptr)  // the query's document, at position causal_offset + i
    begin = Max64(begin, p.document_begin[b * p.keys + p.causal_offset + i]);
  return begin;
}
__device__ __forceinline__ int64_t VisibleEnd(const FusedAttentionParams& p, int64_t b,
                                              int64_t i) {
  int64_t end = p.keys;
  if (p.causal) end = Min64(end, p.causal_offset + i + 1);
  if (p.window > 0 && !p.causal) end = Min64(end, p.causal_offset + i + p.window);
  if (p.key_lengths != nullptr) end = Min64(end, p.key_lengths[b]);
  if (p.document_end != nullptr) end = Min64(end, p.document_end[b * p.keys + p.causal_offset + i]);
  return Max64(end, 0);
}
// Whether key j, below the row's VisibleEnd `row_end`, is inside its window
// and document.
__device__ __forceinline__ bool Visible(const FusedAttentionParams& p, int64_t b, int64_t i,
                                        int64_t j, int64_t row_end) {
  return j < row_end && j >= VisibleBegin(p, b, i);
}
// Queries [begin, end) may see some key of [j_first, j_last]; the dK/dV
// kernels sweep only those (causal: none before j_first - causal_offset;
// a window: none past j_last + W - 1 - causal_offset, and bidirectionally
// none before j_first - W + 1 - causal_offset; key padding past the row's
// length: none at all; documents: none outside the positions from
// j_first's document's begin to j_last's document's end).
__device__ __forceinline__ void QueryRange(const FusedAttentionParams& p, int64_t b,
                                           int64_t j_first, int64_t j_last, int64_t* begin,
                                           int64_t* end) {
  int64_t first = p.causal ? Max64(0, j_first - p.causal_offset) : 0;
  int64_t last_end = p.queries;
  if (p.window > 0) {
    if (!p.causal) first = Max64(first, j_first - p.window + 1 - p.causal_offset);
    last_end = Min64(last_end, j_last + p.window - p.causal_offset);
  }
  if (p.document_begin != nullptr) {  // j_last may lie past the keys (a block's end)
    first = Max64(first, p.document_begin[b * p.keys + j_first] - p.causal_offset);
    last_end = Min64(last_end, p.document_end[b * p.keys + Min64(j_last, p.keys - 1)] -
                                   p.causal_offset);
  }
  if (p.key_lengths != nullptr && j_first >= p.key_lengths[b]) first = p.queries;
  *begin = first;
  *end = Max64(last_end, 0);
}

// The logit of (h, i, j) from the dot product q_i . k_j (j visible).
__device__ __forceinline__ float Logit(const FusedAttentionParams& p, float dot, int64_t h,
                                       int64_t i, int64_t j) {
  float l = p.scale * dot;
  if (p.alibi_slopes != nullptr) {
    const int64_t distance = p.alibi_offset + i - j;
    l -= static_cast<float>(p.alibi_slopes[h] *
                            static_cast<double>(distance < 0 ? -distance : distance));
  }
  if (p.distance_bias != nullptr) l += p.distance_bias[h * p.distance_span + j - i + p.queries - 1];
  if (p.logit_softcap > 0.0f) l = p.logit_softcap * tanhf(l * (1.0f / p.logit_softcap));
  return l;
}

// The derivative of a soft-capped logit by the uncapped one, from the
// capped logit (1 without a soft-cap): ds of the uncapped logit is the
// capped one's times this.
__device__ __forceinline__ float SoftCapSlope(const FusedAttentionParams& p, float capped) {
  if (p.logit_softcap <= 0.0f) return 1.0f;
  const float t = capped * (1.0f / p.logit_softcap);
  return 1.0f - t * t;
}

// Where a row's online softmax starts: the sink's entry (max = its logit,
// sum = exp(0) = 1) with sinks, else nothing seen (-inf, 0).
__device__ __forceinline__ float StartMax(const FusedAttentionParams& p, int64_t h) {
  return p.sink_logits != nullptr ? p.sink_logits[h] : -INFINITY;
}
__device__ __forceinline__ float StartSum(const FusedAttentionParams& p) {
  return p.sink_logits != nullptr ? 1.0f : 0.0f;
}

// The inverted-dropout factor of weight (row, j), row = (b * H + h) * T + i.
__device__ __forceinline__ float Keep(const FusedAttentionParams& p, int64_t row, int64_t j) {
  if (!p.dropout) return 1.0f;
  const uint64_t e = static_cast<uint64_t>(row) * static_cast<uint64_t>(p.keys) + j;
  return DropoutFactor(p.stream, e, p.dropout_threshold, p.keep_scale);
}

// dst[r * pitch + c] = src[(first + r) * cols + c] for r < rows_in_tile,
// c < cols; rows past `limit` are zero. All threads of the block take part:
// warp w copies rows w, w + 4, ..., its lanes consecutive columns
// (coalesced reads, no division). Shared-memory indices are 32-bit (a tile
// holds far fewer than 2^31 floats); global offsets stay 64-bit.
__device__ __forceinline__ void StageRows(const float* src, int64_t first, int64_t limit,
                                          int rows_in_tile, int cols, float* dst, int pitch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < rows_in_tile; r += kWarps) {
    const bool inside = first + r < limit;
    const float* row = inside ? src + (first + r) * cols : src;
    for (int c = lane; c < cols; c += 32) dst[r * pitch + c] = inside ? row[c] : 0.0f;
  }
}

// dot[r] += own row r . tile row `lane` over `depth` columns, for the warp's
// kRowsPerWarp owned rows (own: broadcast reads, pitch own_pitch; tile: the
// lane's own row, pitch tile_pitch). Columns in order, as every kernel sums.
__device__ __forceinline__ void OwnedRowDots(const float* own, int own_pitch, const float* tile,
                                             int tile_pitch, int depth, int warp, int lane,
                                             float (&dot)[kRowsPerWarp]) {
  for (int c = 0; c < depth; ++c) {
    const float t = tile[lane * tile_pitch + c];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) dot[r] += own[(warp * kRowsPerWarp + r) * own_pitch + c] * t;
  }
}

// acc[r][x] += sum over tile rows jj of coef[r] of lane jj (a shuffle) times
// tile[jj][col], col = col0 + lane + 32 x (0 past `cols`): the (4, 32) x
// (32, cols) product of a row's per-lane coefficients with the tile.
template <int kDimsPerLane>
__device__ __forceinline__ void AccumulateShuffledTimesTile(
    const float (&coef)[kRowsPerWarp], const float* tile, int pitch, int cols, int col0,
    int lane, float (&acc)[kRowsPerWarp][kDimsPerLane]) {
  for (int jj = 0; jj < kTile; ++jj) {
    float tcol[kDimsPerLane];
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) {
      const int col = col0 + lane + 32 * x;
      tcol[x] = col < cols ? tile[jj * pitch + col] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float w = __shfl_sync(kFullMask, coef[r], jj);
#pragma unroll
      for (int x = 0; x < kDimsPerLane; ++x) acc[r][x] += w * tcol[x];
    }
  }
}

}  // namespace fused
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_DEVICE_CUH_
