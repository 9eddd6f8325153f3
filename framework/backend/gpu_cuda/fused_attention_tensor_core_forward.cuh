#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_FORWARD_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_FORWARD_CUH_

// The tensor-core fused attention forward kernel (the plan and the shared
// steps: fused_attention_tensor_core.cuh): per warp, 16 query rows against
// tiles of 64 keys; logits by WMMA, the online softmax by the lanes (two per
// row), the output accumulated by WMMA through shared memory.

#include "framework/backend/gpu_cuda/fused_attention_tensor_core.cuh"

namespace tvlab {
namespace cuda {
namespace tc {

#if TVLAB_TENSOR_CORE_BODY

// The online softmax of one tile for this lane's half (32 columns) of row r,
// query i: srow holds the tile's dot products and gets the logits; wrow
// gets the weights exp(s - m_new) * keep in bf16; m and l (the same on both
// lanes of the row) are updated. Returns alpha = exp(m_old - m_new), by
// which the caller rescales what was accumulated.
__device__ __forceinline__ float SoftmaxTileHalfRow(const FusedAttentionParams& p, float* srow,
                                                    bf16* wrow, int64_t h, int64_t i,
                                                    int64_t j0, int64_t row_end, int half,
                                                    int64_t row, float& m, float& l) {
  float tile_max = -INFINITY;
  const int64_t b = row / (p.heads * p.queries);  // row = (b * H + h) * T + i
  for (int c = half * 32; c < half * 32 + 32; ++c) {
    const int64_t j = j0 + c;
    const float s = Visible(p, b, i, j, row_end) ? Logit(p, srow[c], h, i, j) : -INFINITY;
    srow[c] = s;
    tile_max = fmaxf(tile_max, s);
  }
  tile_max = fmaxf(tile_max, __shfl_xor_sync(fused::kFullMask, tile_max, 1));
  const float m_new = fmaxf(m, tile_max);
  const float alpha = m_new == -INFINITY ? 1.0f : expf(m - m_new);  // 0 while m is -inf
  float sum = 0.0f;
  for (int c = half * 32; c < half * 32 + 32; ++c) {
    const float s = srow[c];
    const float e = s == -INFINITY ? 0.0f : expf(s - m_new);
    sum += e;
    wrow[c] = ToBf16(e == 0.0f ? 0.0f : e * Keep(p, row, j0 + c));
  }
  sum += __shfl_xor_sync(fused::kFullMask, sum, 1);
  l = l * alpha + sum;
  m = m_new;
  return alpha;
}

// O (16, hvp) += W (16, 64) V (64, hvp), with O kept in shared memory (fp32,
// pitch o_pitch) and loaded into fragments tile by tile.
template <int kDim>
__device__ __forceinline__ void AccumulateIntoSharedRows(float* sO, int o_pitch, const bf16* sW,
                                                         int w_pitch, const bf16* sV,
                                                         int v_pitch, int hvp) {
#pragma unroll
  for (int n = 0; n < kDim / 16; ++n) {
    if (n * 16 >= hvp) break;
    FragC acc;
    wmma::load_matrix_sync(acc, sO + n * 16, o_pitch, wmma::mem_row_major);
#pragma unroll
    for (int kk = 0; kk < kCols; kk += 16) {
      FragA fa;
      FragBRow fb;
      wmma::load_matrix_sync(fa, sW + kk, w_pitch);
      wmma::load_matrix_sync(fb, sV + kk * v_pitch + n * 16, v_pitch);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(sO + n * 16, acc, o_pitch, wmma::mem_row_major);
  }
}

#endif  // TVLAB_TENSOR_CORE_BODY

// Grid: B * H * ceil(T / 64) blocks. Regions: own_qk = Q rows, tile_qk = K
// tile, tile_v = V tile; per warp s = logits, w = weights, o = output
// accumulator (16, hvp).
template <int kDim>
__global__ void __launch_bounds__(kThreads)
    ForwardKernel(FusedAttentionParams p, const float* __restrict__ q,
                  const float* __restrict__ k, const float* __restrict__ v,
                  float* __restrict__ out, float* __restrict__ lse) {
#if TVLAB_TENSOR_CORE_BODY
  TVLAB_DYNAMIC_SHARED_BYTES(smem);
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int hsp = Pad16(hs), hvp = Pad16(hv);
  const SharedLayout L(hsp, hvp, TcKernel::kForward);
  const int64_t T = p.queries, S = p.keys;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bf16* sQ = reinterpret_cast<bf16*>(smem + L.own_qk);   // (64, hsp)
  bf16* sK = reinterpret_cast<bf16*>(smem + L.tile_qk);  // (64, hsp)
  bf16* sV = reinterpret_cast<bf16*>(smem + L.tile_v);   // (64, hvp)
  unsigned char* mine = smem + L.warps + warp * L.warp_bytes;
  float* sS = reinterpret_cast<float*>(mine + L.warp_s);  // (16, 64) logits
  bf16* sW = reinterpret_cast<bf16*>(mine + L.warp_w);    // (16, 64) weights
  float* sO = reinterpret_cast<float*>(mine + L.warp_o);  // (16, hvp) output

  const int64_t q_tiles = (T + kBlockRows - 1) / kBlockRows;
  const int64_t bh = blockIdx.x / q_tiles;                 // b * H + h
  const int64_t i0 = (blockIdx.x % q_tiles) * kBlockRows;  // first query of the block
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t g = h / (p.heads / p.kv_heads);
  const float* kbg = k + (b * p.kv_heads + g) * S * hs;  // (S, hs)
  const float* vbg = v + (b * p.kv_heads + g) * S * hv;  // (S, hs_v)

  StageBf16(q + bh * T * hs, i0, T, kBlockRows, hs, hsp, sQ, L.qk_pitch);
  for (int e = lane; e < kRows * hvp; e += 32) sO[(e / hvp) * L.o_pitch + e % hvp] = 0.0f;
  __syncwarp();  // the rows are zero before any lane rescales or reads them
  const int64_t block_begin = VisibleBegin(p, b, i0);  // a window's band starts here
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kBlockRows, T) - 1);

  // This lane's row r and column half; its row's running max m and sum l
  // (the two lanes of a row hold the same values).
  const int r = lane / 2, half = lane % 2;
  const int64_t i = i0 + warp * kRows + r;
  const int64_t row_end = i < T ? VisibleEnd(p, b, i) : 0;
  float m = StartMax(p, h), l = StartSum(p);  // the sink's entry, or nothing seen

  for (int64_t j0 = block_begin; j0 < block_end; j0 += kCols) {
    __syncthreads();  // the previous tiles are consumed
    StageBf16(kbg, j0, S, kCols, hs, hsp, sK, L.qk_pitch);
    StageBf16(vbg, j0, S, kCols, hv, hvp, sV, L.v_pitch);
    __syncthreads();

    // Logits' dot products: (16, hsp) x (hsp, 64).
    RowsTimesTileT(sQ + warp * kRows * L.qk_pitch, L.qk_pitch, sK, L.qk_pitch, hsp, sS,
                   L.s_pitch);
    __syncwarp();
    const float alpha = SoftmaxTileHalfRow(p, sS + r * L.s_pitch, sW + r * L.w_pitch, h, i, j0,
                                           row_end, half, bh * T + i, m, l);
    float* orow = sO + r * L.o_pitch;
    for (int c = half; c < hvp; c += 2) orow[c] *= alpha;
    __syncwarp();
    AccumulateIntoSharedRows<kDim>(sO, L.o_pitch, sW, L.w_pitch, sV, L.v_pitch, hvp);
    __syncwarp();
  }

  // out = O / l, lse = m + log(l); a row with no visible key: 0 and -inf.
  if (i < T) {
    const int64_t row = bh * T + i;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = half; c < hv; c += 2)
      out[row * hv + c] = l > 0.0f ? sO[r * L.o_pitch + c] * inv : 0.0f;
    if (half == 0) lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;
  }
#endif  // TVLAB_TENSOR_CORE_BODY
}

}  // namespace tc
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_FORWARD_CUH_
