#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_BACKWARD_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_BACKWARD_CUH_

// The fp32 fused attention backward kernels (fused_attention_device.cuh has
// the work split and the helpers): D = dout . out per row, then dQ (shaped
// like the forward) and dK/dV (one block per 16 keys of a kv head, so each
// row of dk and dv has one writer).
//
// With P the softmax weights (recomputed as exp(logit - lse)), M the dropout
// factors and W = P * M (the reference backend's comment):
//   dv_j += W_ij dout_i;  dW_ij = dout_i . v_j;
//   ds_ij = P_ij (M_ij dW_ij - D_i) scale cap'_ij (cap' the soft-cap's slope);  dq_i += ds_ij k_j;  dk_j += ds_ij q_i.

#include "framework/backend/gpu_cuda/fused_attention_device.cuh"

namespace tvlab {
namespace cuda {
namespace fused {

// Step 1: row_dot[row] = D_i = dout_i . out_i (B * H * T rows), one warp
// per row.
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

// ds of the weight (i, j), given its logit's dot product and dW; 0 when key
// j is not visible to the row (row_end), lse and D being the row's.
__device__ __forceinline__ float WeightGradient(const FusedAttentionParams& p, float dot, float dw,
                                                int64_t b, int64_t h, int64_t i, int64_t j,
                                                int64_t row, int64_t row_end, float row_lse,
                                                float row_d) {
  if (!Visible(p, b, i, j, row_end)) return 0.0f;
  const float logit = Logit(p, dot, h, i, j);
  const float prob = expf(logit - row_lse);
  return prob * (Keep(p, row, j) * dw - row_d) * p.scale * SoftCapSlope(p, logit);
}

// Step 2: dq. Grid and rows as the forward.
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
  const int64_t block_begin = VisibleBegin(p, b, i0);
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

  for (int64_t j0 = block_begin; j0 < block_end; j0 += kTile) {
    __syncthreads();
    StageRows(kbg, j0, S, kTile, hs, sK, hs + 1);
    StageRows(vbg, j0, S, kTile, hv, sV, hv + 1);
    __syncthreads();
    // Logits q_r . k_j and dW = dout_r . v_j for this lane's key j.
    float dot[kRowsPerWarp] = {}, dw[kRowsPerWarp] = {}, ds[kRowsPerWarp];
    OwnedRowDots(sQ, hs, sK, hs + 1, hs, warp, lane, dot);
    OwnedRowDots(sdO, hv, sV, hv + 1, hv, warp, lane, dw);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = i0 + warp * kRowsPerWarp + r;
      ds[r] = WeightGradient(p, dot[r], dw[r], b, h, i, j0 + lane, bh * T + i, row_end[r],
                             row_lse[r], row_d[r]);
    }
    // dq[r][col] += sum_jj ds[r](jj) * K[jj][col]: (4, 32) x (32, hs).
    AccumulateShuffledTimesTile<kDimsPerLane>(ds, sK, hs + 1, hs, col0, lane, acc);
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

// dv[r][col] += sum_ii W[r](ii) dout[ii][col] and dk[r][col] += sum_ii
// ds[r](ii) q[ii][col] over the 32 queries ii of the tile (lane ii holds
// their W and ds): (4, 32) x (32, hs[_v]), both in one sweep.
template <int kDimsPerLane>
__device__ __forceinline__ void AccumulateKeyValueGradients(
    const float (&weight)[kRowsPerWarp], const float (&ds)[kRowsPerWarp], const float* sQ,
    const float* sdO, int hs, int hv, int col0, int lane,
    float (&dk_acc)[kRowsPerWarp][kDimsPerLane], float (&dv_acc)[kRowsPerWarp][kDimsPerLane]) {
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

// One query tile (queries i0 .. i0 + 31 of head h, staged: sQ, sdO, and
// their lse and D in sLse, sD) against the warp's owned keys j0 + r: the
// weights W and ds of this lane's query, accumulated into dk and dv.
template <int kDimsPerLane>
__device__ __forceinline__ void KeyValueTile(const FusedAttentionParams& p, int64_t b, int64_t h,
                                             int64_t i0, int64_t j0, const float* sK,
                                             const float* sV, const float* sQ, const float* sdO,
                                             const float* sLse, const float* sD, int col0,
                                             float (&dk_acc)[kRowsPerWarp][kDimsPerLane],
                                             float (&dv_acc)[kRowsPerWarp][kDimsPerLane]) {
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = (b * p.heads + h) * p.queries + i0 + lane;  // this lane's query's row
  const int64_t i = i0 + lane;
  const float row_lse = sLse[lane];
  const int64_t row_end = row_lse == -INFINITY ? 0 : VisibleEnd(p, b, i);
  // Logits q_i . k_r and dW = dout_i . v_r for the warp's keys r.
  float dot[kRowsPerWarp] = {}, dw[kRowsPerWarp] = {};
  OwnedRowDots(sK, hs, sQ, hs + 1, hs, warp, lane, dot);
  OwnedRowDots(sV, hv, sdO, hv + 1, hv, warp, lane, dw);
  float weight[kRowsPerWarp], ds[kRowsPerWarp];  // W_ir and ds_ir of this lane's query
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t j = j0 + warp * kRowsPerWarp + r;
    weight[r] = ds[r] = 0.0f;
    if (Visible(p, b, i, j, row_end)) {  // also i < T (row_end is 0 past T: lse -inf)
      const float logit = Logit(p, dot[r], h, i, j);
      const float prob = expf(logit - row_lse);
      const float keep = Keep(p, row, j);
      weight[r] = prob * keep;
      ds[r] = prob * (keep * dw[r] - sD[lane]) * p.scale * SoftCapSlope(p, logit);
    }
  }
  AccumulateKeyValueGradients<kDimsPerLane>(weight, ds, sQ, sdO, hs, hv, col0, lane, dk_acc,
                                            dv_acc);
}

// Step 3: dk and dv. Grid: B * G * ceil(S / 16) blocks; a block owns 16
// keys of one (b, g) and sweeps the queries of every query head of the
// group in tiles of 32 (lane = query), so it alone writes those rows of dk
// and dv.
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

  // Queries outside [q_begin, q_end) see none of the owned keys (QueryRange).
  int64_t q_begin = 0, q_end = T;
  QueryRange(p, b, j0, j0 + kRowsPerBlock - 1, &q_begin, &q_end);

  for (int64_t h = g * group; h < (g + 1) * group; ++h) {
    const int64_t bh = b * p.heads + h;
    for (int64_t i0 = q_begin; i0 < q_end; i0 += kTile) {
      __syncthreads();
      StageRows(q + bh * T * hs, i0, T, kTile, hs, sQ, hs + 1);
      StageRows(dout + bh * T * hv, i0, T, kTile, hv, sdO, hv + 1);
      if (threadIdx.x < kTile) {
        const int64_t i = i0 + threadIdx.x;
        sLse[threadIdx.x] = i < T ? lse[bh * T + i] : -INFINITY;
        sD[threadIdx.x] = i < T ? row_dot[bh * T + i] : 0.0f;
      }
      __syncthreads();
      KeyValueTile<kDimsPerLane>(p, b, h, i0, j0, sK, sV, sQ, sdO, sLse, sD, col0, dk_acc,
                                 dv_acc);
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

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_BACKWARD_CUH_
