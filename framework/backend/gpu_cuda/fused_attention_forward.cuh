#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_FORWARD_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_FORWARD_CUH_

// The fp32 fused attention forward kernel (fused_attention_device.cuh has
// the work split and the helpers): per owned query row, an online softmax
// over tiles of 32 keys, then out = acc / l and lse = m + log(l).

#include "framework/backend/gpu_cuda/fused_attention_device.cuh"

namespace tvlab {
namespace cuda {
namespace fused {

// A warp's owned query rows in the forward (warp-uniform values): their
// visible ends, running max m and sum l, and the lane's output columns acc.
template <int kDimsPerLane>
struct ForwardRows {
  int64_t end[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp];
  float acc[kRowsPerWarp][kDimsPerLane];
};

// Rows first_row .. first_row + 3 of batch row b, head h: nothing seen yet
// but the sink.
template <int kDimsPerLane>
__device__ __forceinline__ void StartRows(const FusedAttentionParams& p, int64_t b, int64_t h,
                                          int64_t first_row, ForwardRows<kDimsPerLane>& rows) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = first_row + r;
    rows.end[r] = i < p.queries ? VisibleEnd(p, b, i) : 0;
    rows.m[r] = StartMax(p, h);  // the sink's entry, or nothing seen
    rows.l[r] = StartSum(p);
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) rows.acc[r][x] = 0.0f;
  }
}

// One tile of the online softmax, for this lane's key j and the owned rows
// (queries first_row + r) with dot products dot[r]: rescales what was
// accumulated by exp(m_old - m_new) and returns in weight[r] this tile's
// exp(s - m_new) times the dropout factor (row_base = (b * H + h) * T).
template <int kDimsPerLane>
__device__ __forceinline__ void OnlineSoftmaxStep(const FusedAttentionParams& p,
                                                  const float (&dot)[kRowsPerWarp], int64_t h,
                                                  int64_t first_row, int64_t j, int64_t row_base,
                                                  ForwardRows<kDimsPerLane>& rows,
                                                  float (&weight)[kRowsPerWarp]) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = first_row + r;
    const int64_t b = row_base / (p.heads * p.queries);
    const float s = Visible(p, b, i, j, rows.end[r]) ? Logit(p, dot[r], h, i, j) : -INFINITY;
    const float m_new = fmaxf(rows.m[r], WarpMax(s));
    float alpha = 1.0f, e = 0.0f;
    if (m_new != -INFINITY) {  // else nothing visible yet: nothing to add
      alpha = expf(rows.m[r] - m_new);  // 0 when m is still -inf
      e = s == -INFINITY ? 0.0f : expf(s - m_new);
    }
    rows.l[r] = rows.l[r] * alpha + WarpSum(e);
    rows.m[r] = m_new;
    weight[r] = e == 0.0f ? 0.0f : e * Keep(p, row_base + i, j);
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) rows.acc[r][x] *= alpha;
  }
}

// out = acc / l and lse = m + log(l) of the owned rows; a row with no
// visible key: 0 and -inf.
template <int kDimsPerLane>
__device__ __forceinline__ void FinishRows(const FusedAttentionParams& p, int64_t first_row,
                                           int64_t row_base, int col0, int lane,
                                           const ForwardRows<kDimsPerLane>& rows, float* out,
                                           float* lse) {
  const int hv = static_cast<int>(p.value_dim);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = first_row + r;
    if (i >= p.queries) continue;
    const int64_t row = row_base + i;
    const float l = rows.l[r];
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) {
      const int col = col0 + lane + 32 * x;
      if (col < hv) out[row * hv + col] = l > 0.0f ? rows.acc[r][x] * inv : 0.0f;
    }
    if (col0 == 0 && lane == 0) lse[row] = l > 0.0f ? rows.m[r] + logf(l) : -INFINITY;
  }
}

// Grid: B * H * ceil(T / 16) blocks, the query tiles of one (b, h) adjacent
// (they read the same K/V, which stays in L2).
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
  const float* kbg = k + (b * p.kv_heads + g) * S * hs;  // (S, hs) of (b, g)
  const float* vbg = v + (b * p.kv_heads + g) * S * hv;  // (S, hs_v) of (b, g)

  StageRows(q + bh * T * hs, i0, T, kRowsPerBlock, hs, sQ, hs);
  // Keys outside [first row's VisibleBegin, last row's VisibleEnd) are hidden
  // from every row of the block (causal: the tiles above the diagonal are
  // skipped; a window: the tiles before its band too).
  const int64_t block_begin = VisibleBegin(p, b, i0);
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kRowsPerBlock, T) - 1);
  const int64_t first_row = i0 + warp * kRowsPerWarp;
  ForwardRows<kDimsPerLane> rows;
  StartRows(p, b, h, first_row, rows);

  for (int64_t j0 = block_begin; j0 < block_end; j0 += kTile) {
    __syncthreads();  // the previous tile is consumed
    StageRows(kbg, j0, S, kTile, hs, sK, hs + 1);
    StageRows(vbg, j0, S, kTile, hv, sV, hv);
    __syncthreads();
    // (rows, hs) x (hs, 32) -> this lane's column j of the (4, 32) logits.
    float dot[kRowsPerWarp] = {};
    OwnedRowDots(sQ, hs, sK, hs + 1, hs, warp, lane, dot);
    float weight[kRowsPerWarp];  // p_ij * keep_ij of this lane's key
    OnlineSoftmaxStep(p, dot, h, first_row, j0 + lane, bh * T, rows, weight);
    // acc[r][col] += sum_jj weight[r](jj) * V[jj][col]: (4, 32) x (32, hs_v).
    AccumulateShuffledTimesTile<kDimsPerLane>(weight, sV, hv, hv, col0, lane, rows.acc);
  }
  FinishRows(p, first_row, bh * T, col0, lane, rows, out, lse);
}

}  // namespace fused
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_FORWARD_CUH_
