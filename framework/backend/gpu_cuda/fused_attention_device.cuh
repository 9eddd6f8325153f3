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
// Masks, ALiBi and dropout are computed in the tile from the params, never
// materialised. Dropout uses philox.cuh with the CPU's element indexing:
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

//
// This file holds the kernels only; fused_attention_kernel.cu launches them.
// They use nothing but CUDA's built-ins (threadIdx, blockIdx,
// __syncthreads, __shfl_sync, __shfl_xor_sync, expf, logf, fmaxf) and the
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

// Keys [0, VisibleEnd) may be visible to query i of batch row b; none
// beyond (FusedAttentionDesc::VisibleEnd). Non-decreasing in i.
__device__ __forceinline__ int64_t VisibleEnd(const FusedAttentionParams& p, int64_t b,
                                              int64_t i) {
  int64_t end = p.keys;
  if (p.causal) end = Min64(end, p.causal_offset + i + 1);
  if (p.key_lengths != nullptr) end = Min64(end, p.key_lengths[b]);
  return Max64(end, 0);
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
  return l;
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

// ---------------------------------------------------------------------------
// Forward. Grid: B * H * ceil(T / 16) blocks, the query tiles of one (b, h)
// adjacent (they read the same K/V, which stays in L2).
// Shared memory (floats):
//   sQ (16, hs)       this block's query rows, broadcast reads
//   sK (32, hs + 1)   the current key tile, lane j reads row j
//   sV (32, hs_v)     the current value tile, lane reads its columns
template <int kDimsPerLane>
__global__ void __launch_bounds__(kThreads)
    ForwardKernel(FusedAttentionParams p, const float* __restrict__ q,
                  const float* __restrict__ k, const float* __restrict__ v,
                  float* __restrict__ out, float* __restrict__ lse, int col0) {
  TVLAB_DYNAMIC_SHARED_FLOATS(smem);
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int64_t T = p.queries, S = p.keys;
  float* sQ = smem;                        // (16, hs)
  float* sK = sQ + kRowsPerBlock * hs;     // (32, hs + 1)
  float* sV = sK + kTile * (hs + 1);       // (32, hs_v)

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t q_tiles = (T + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t bh = blockIdx.x / q_tiles;                    // b * H + h
  const int64_t i0 = (blockIdx.x % q_tiles) * kRowsPerBlock;  // first query of the block
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t g = h / (p.heads / p.kv_heads);
  const float* qbh = q + bh * T * hs;                  // (T, hs) of (b, h)
  const float* kbg = k + (b * p.kv_heads + g) * S * hs;  // (S, hs) of (b, g)
  const float* vbg = v + (b * p.kv_heads + g) * S * hv;  // (S, hs_v) of (b, g)

  StageRows(qbh, i0, T, kRowsPerBlock, hs, sQ, hs);
  // Keys at or past the last row's VisibleEnd are hidden from every row of
  // the block (causal: the tiles above the diagonal are skipped).
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kRowsPerBlock, T) - 1);

  // Per owned row r (warp-uniform values): query i, its visible end, the
  // running max m and sum l, and the lane's output columns acc.
  int64_t row_end[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    row_end[r] = i < T ? VisibleEnd(p, b, i) : 0;
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) acc[r][x] = 0.0f;
  }

  for (int64_t j0 = 0; j0 < block_end; j0 += kTile) {
    __syncthreads();  // the previous tile is consumed
    StageRows(kbg, j0, S, kTile, hs, sK, hs + 1);
    StageRows(vbg, j0, S, kTile, hv, sV, hv);
    __syncthreads();

    // (rows, hs) x (hs, 32) -> this lane's column j of the (4, 32) logits.
    const int64_t j = j0 + lane;
    float dot[kRowsPerWarp] = {};
    for (int c = 0; c < hs; ++c) {
      const float kc = sK[lane * (hs + 1) + c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
        dot[r] += sQ[(warp * kRowsPerWarp + r) * hs + c] * kc;
    }
    // Online softmax per row: rescale what was accumulated by
    // exp(m_old - m_new), add this tile's exp(s - m_new).
    float weight[kRowsPerWarp];  // p_ij * keep_ij of this lane's key
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = i0 + warp * kRowsPerWarp + r;
      const float s = j < row_end[r] ? Logit(p, dot[r], h, i, j) : -INFINITY;
      const float m_new = fmaxf(m[r], WarpMax(s));
      float alpha = 1.0f, e = 0.0f;
      if (m_new != -INFINITY) {  // else nothing visible yet: nothing to add
        alpha = expf(m[r] - m_new);  // 0 when m[r] is still -inf
        e = s == -INFINITY ? 0.0f : expf(s - m_new);
      }
      l[r] = l[r] * alpha + WarpSum(e);
      m[r] = m_new;
      weight[r] = e == 0.0f ? 0.0f : e * Keep(p, bh * T + i, j);
#pragma unroll
      for (int x = 0; x < kDimsPerLane; ++x) acc[r][x] *= alpha;
    }
    // acc[r][col] += sum_jj weight[r](jj) * V[jj][col]: (4, 32) x (32, hs_v).
    for (int jj = 0; jj < kTile; ++jj) {
      float vcol[kDimsPerLane];
#pragma unroll
      for (int x = 0; x < kDimsPerLane; ++x) {
        const int col = col0 + lane + 32 * x;
        vcol[x] = col < hv ? sV[jj * hv + col] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float w = __shfl_sync(kFullMask, weight[r], jj);
#pragma unroll
        for (int x = 0; x < kDimsPerLane; ++x) acc[r][x] += w * vcol[x];
      }
    }
  }

  // out = acc / l; lse = m + log(l). A row with no visible key: 0 and -inf.
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    if (i >= T) continue;
    const int64_t row = bh * T + i;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) {
      const int col = col0 + lane + 32 * x;
      if (col < hv) out[row * hv + col] = l[r] > 0.0f ? acc[r][x] * inv : 0.0f;
    }
    if (col0 == 0 && lane == 0) lse[row] = l[r] > 0.0f ? m[r] + logf(l[r]) : -INFINITY;
  }
}

// ---------------------------------------------------------------------------
// Backward, step 1: row_dot[row] = D_i = dout_i . out_i (B * H * T rows),
// one warp per row.
__global__ void __launch_bounds__(kThreads)
    RowDotKernel(const float* __restrict__ dout, const float* __restrict__ out, int64_t rows,
                 int64_t hv, float* __restrict__ row_dot) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarps) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together
  float sum = 0.0f;
  for (int64_t c = lane; c < hv; c += 32) sum += dout[row * hv + c] * out[row * hv + c];
  sum = WarpSum(sum);
  if (lane == 0) row_dot[row] = sum;
}

// With P the softmax weights (recomputed as exp(logit - lse)), M the dropout
// factors and W = P * M (the reference backend's comment):
//   dv_j += W_ij dout_i;  dW_ij = dout_i . v_j;
//   ds_ij = P_ij (M_ij dW_ij - D_i) scale;  dq_i += ds_ij k_j;  dk_j += ds_ij q_i.

// Backward, step 2: dq. Grid and rows as the forward.
// Shared memory (floats):
//   sQ  (16, hs)        query rows, broadcast
//   sdO (16, hs_v)      their output gradients, broadcast
//   sK  (32, hs + 1)    key tile: lane j reads row j; accumulation reads columns
//   sV  (32, hs_v + 1)  value tile: lane j reads row j
template <int kDimsPerLane>
__global__ void __launch_bounds__(kThreads)
    BackwardQueryKernel(FusedAttentionParams p, const float* __restrict__ q,
                        const float* __restrict__ k, const float* __restrict__ v,
                        const float* __restrict__ lse, const float* __restrict__ dout,
                        const float* __restrict__ row_dot, float* __restrict__ dq,
                        int col0) {
  TVLAB_DYNAMIC_SHARED_FLOATS(smem);
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int64_t T = p.queries, S = p.keys;
  float* sQ = smem;                          // (16, hs)
  float* sdO = sQ + kRowsPerBlock * hs;      // (16, hs_v)
  float* sK = sdO + kRowsPerBlock * hv;      // (32, hs + 1)
  float* sV = sK + kTile * (hs + 1);         // (32, hs_v + 1)

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t q_tiles = (T + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t i0 = (blockIdx.x % q_tiles) * kRowsPerBlock;
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t g = h / (p.heads / p.kv_heads);
  const float* kbg = k + (b * p.kv_heads + g) * S * hs;  // (S, hs)
  const float* vbg = v + (b * p.kv_heads + g) * S * hv;  // (S, hs_v)

  StageRows(q + bh * T * hs, i0, T, kRowsPerBlock, hs, sQ, hs);
  StageRows(dout + bh * T * hv, i0, T, kRowsPerBlock, hv, sdO, hv);
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kRowsPerBlock, T) - 1);

  // Per owned row: visible end (0 for a row that saw no key: lse = -inf, no
  // gradient), lse, D, and the lane's dq columns.
  int64_t row_end[kRowsPerWarp];
  float row_lse[kRowsPerWarp], row_d[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    row_lse[r] = i < T ? lse[bh * T + i] : -INFINITY;
    row_d[r] = i < T ? row_dot[bh * T + i] : 0.0f;
    row_end[r] = row_lse[r] == -INFINITY ? 0 : VisibleEnd(p, b, i);
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) acc[r][x] = 0.0f;
  }

  for (int64_t j0 = 0; j0 < block_end; j0 += kTile) {
    __syncthreads();
    StageRows(kbg, j0, S, kTile, hs, sK, hs + 1);
    StageRows(vbg, j0, S, kTile, hv, sV, hv + 1);
    __syncthreads();

    const int64_t j = j0 + lane;
    // Logits q_r . k_j and dW = dout_r . v_j for this lane's key j.
    float dot[kRowsPerWarp] = {}, dw[kRowsPerWarp] = {};
    for (int c = 0; c < hs; ++c) {
      const float kc = sK[lane * (hs + 1) + c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) dot[r] += sQ[(warp * kRowsPerWarp + r) * hs + c] * kc;
    }
    for (int c = 0; c < hv; ++c) {
      const float vc = sV[lane * (hv + 1) + c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) dw[r] += sdO[(warp * kRowsPerWarp + r) * hv + c] * vc;
    }
    float ds[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = i0 + warp * kRowsPerWarp + r;
      ds[r] = 0.0f;
      if (j < row_end[r]) {
        const float prob = expf(Logit(p, dot[r], h, i, j) - row_lse[r]);
        ds[r] = prob * (Keep(p, bh * T + i, j) * dw[r] - row_d[r]) * p.scale;
      }
    }
    // dq[r][col] += sum_jj ds[r](jj) * K[jj][col]: (4, 32) x (32, hs).
    for (int jj = 0; jj < kTile; ++jj) {
      float kcol[kDimsPerLane];
#pragma unroll
      for (int x = 0; x < kDimsPerLane; ++x) {
        const int col = col0 + lane + 32 * x;
        kcol[x] = col < hs ? sK[jj * (hs + 1) + col] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float w = __shfl_sync(kFullMask, ds[r], jj);
#pragma unroll
        for (int x = 0; x < kDimsPerLane; ++x) acc[r][x] += w * kcol[x];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    if (i >= T) continue;
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) {
      const int col = col0 + lane + 32 * x;
      if (col < hs) dq[(bh * T + i) * hs + col] = acc[r][x];
    }
  }
}

// Backward, step 3: dk and dv. Grid: B * G * ceil(S / 16) blocks; a block
// owns 16 keys of one (b, g) and sweeps the queries of every query head of
// the group in tiles of 32 (lane = query), so it alone writes those rows of
// dk and dv.
// Shared memory (floats):
//   sK   (16, hs)        owned key rows, broadcast
//   sV   (16, hs_v)      owned value rows, broadcast
//   sQ   (32, hs + 1)    query tile: lane i reads row i; accumulation reads columns
//   sdO  (32, hs_v + 1)  output-gradient tile, likewise
//   sLse (32), sD (32)   the tile's lse and D
template <int kDimsPerLane>
__global__ void __launch_bounds__(kThreads)
    BackwardKeyValueKernel(FusedAttentionParams p, const float* __restrict__ q,
                           const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ lse, const float* __restrict__ dout,
                           const float* __restrict__ row_dot, float* __restrict__ dk,
                           float* __restrict__ dv, int col0) {
  TVLAB_DYNAMIC_SHARED_FLOATS(smem);
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int64_t T = p.queries, S = p.keys;
  float* sK = smem;                        // (16, hs)
  float* sV = sK + kRowsPerBlock * hs;     // (16, hs_v)
  float* sQ = sV + kRowsPerBlock * hv;     // (32, hs + 1)
  float* sdO = sQ + kTile * (hs + 1);      // (32, hs_v + 1)
  float* sLse = sdO + kTile * (hv + 1);    // (32)
  float* sD = sLse + kTile;                // (32)

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t k_tiles = (S + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t bg = blockIdx.x / k_tiles;                    // b * G + g
  const int64_t j0 = (blockIdx.x % k_tiles) * kRowsPerBlock;  // first owned key
  const int64_t b = bg / p.kv_heads, g = bg % p.kv_heads;
  const int64_t group = p.heads / p.kv_heads;

  StageRows(k + bg * S * hs, j0, S, kRowsPerBlock, hs, sK, hs);
  StageRows(v + bg * S * hv, j0, S, kRowsPerBlock, hv, sV, hv);

  float dk_acc[kRowsPerWarp][kDimsPerLane], dv_acc[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) dk_acc[r][x] = dv_acc[r][x] = 0.0f;

  // Queries before q_begin see none of the owned keys (causal: query i sees
  // key j iff i >= j - causal_offset); with key lengths, keys past the
  // row's length are seen by no query at all.
  int64_t q_begin = p.causal ? Max64(0, j0 - p.causal_offset) : 0;
  if (p.key_lengths != nullptr && j0 >= p.key_lengths[b]) q_begin = T;

  for (int64_t h = g * group; h < (g + 1) * group; ++h) {
    const int64_t bh = b * p.heads + h;
    for (int64_t i0 = q_begin; i0 < T; i0 += kTile) {
      __syncthreads();
      StageRows(q + bh * T * hs, i0, T, kTile, hs, sQ, hs + 1);
      StageRows(dout + bh * T * hv, i0, T, kTile, hv, sdO, hv + 1);
      if (threadIdx.x < kTile) {
        const int64_t i = i0 + threadIdx.x;
        sLse[threadIdx.x] = i < T ? lse[bh * T + i] : -INFINITY;
        sD[threadIdx.x] = i < T ? row_dot[bh * T + i] : 0.0f;
      }
      __syncthreads();

      const int64_t i = i0 + lane;  // this lane's query
      const float row_lse = sLse[lane];
      const int64_t row_end = row_lse == -INFINITY ? 0 : VisibleEnd(p, b, i);
      // Logits q_i . k_r and dW = dout_i . v_r for the warp's keys r.
      float dot[kRowsPerWarp] = {}, dw[kRowsPerWarp] = {};
      for (int c = 0; c < hs; ++c) {
        const float qc = sQ[lane * (hs + 1) + c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) dot[r] += sK[(warp * kRowsPerWarp + r) * hs + c] * qc;
      }
      for (int c = 0; c < hv; ++c) {
        const float oc = sdO[lane * (hv + 1) + c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) dw[r] += sV[(warp * kRowsPerWarp + r) * hv + c] * oc;
      }
      float weight[kRowsPerWarp], ds[kRowsPerWarp];  // W_ir and ds_ir of this lane's query
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t j = j0 + warp * kRowsPerWarp + r;
        weight[r] = ds[r] = 0.0f;
        if (j < row_end) {  // also i < T (row_end is 0 past T: lse -inf)
          const float prob = expf(Logit(p, dot[r], h, i, j) - row_lse);
          const float keep = Keep(p, bh * T + i, j);
          weight[r] = prob * keep;
          ds[r] = prob * (keep * dw[r] - sD[lane]) * p.scale;
        }
      }
      // dv[r][col] += sum_ii W[r](ii) dout[ii][col];
      // dk[r][col] += sum_ii ds[r](ii) q[ii][col]: (4, 32) x (32, hs[_v]).
      for (int ii = 0; ii < kTile; ++ii) {
        float qcol[kDimsPerLane], ocol[kDimsPerLane];
#pragma unroll
        for (int x = 0; x < kDimsPerLane; ++x) {
          const int col = col0 + lane + 32 * x;
          qcol[x] = col < hs ? sQ[ii * (hs + 1) + col] : 0.0f;
          ocol[x] = col < hv ? sdO[ii * (hv + 1) + col] : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          const float w = __shfl_sync(kFullMask, weight[r], ii);
          const float s = __shfl_sync(kFullMask, ds[r], ii);
#pragma unroll
          for (int x = 0; x < kDimsPerLane; ++x) {
            dv_acc[r][x] += w * ocol[x];
            dk_acc[r][x] += s * qcol[x];
          }
        }
      }
    }
  }

  // Every owned key row is written (zeros where no query saw it).
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t j = j0 + warp * kRowsPerWarp + r;
    if (j >= S) continue;
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) {
      const int col = col0 + lane + 32 * x;
      if (col < hs) dk[(bg * S + j) * hs + col] = dk_acc[r][x];
      if (col < hv) dv[(bg * S + j) * hv + col] = dv_acc[r][x];
    }
  }
}

}  // namespace fused
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_DEVICE_CUH_
