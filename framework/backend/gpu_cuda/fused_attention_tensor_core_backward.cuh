#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_BACKWARD_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_BACKWARD_CUH_

// The tensor-core fused attention backward kernels (the plan and the shared
// steps: fused_attention_tensor_core.cuh; D = dout . out comes from
// fused::RowDotKernel): dQ shaped like the forward, and dK/dV with one
// block per 64 keys of a kv head, so each row of dk and dv has one writer.

#include "framework/backend/gpu_cuda/fused_attention_tensor_core.cuh"

namespace tvlab {
namespace cuda {
namespace tc {

// With P the weights recomputed as exp(logit - lse), M the dropout factors
// and D_i = dout_i . out_i (fused::RowDotKernel):
//   dV += (P M)^T dout;  dP = dout V^T;  dS = P (M dP - D) scale cap'
// (cap' the soft-cap's slope, 1 without one);
//   dQ += dS K;  dK += dS^T Q.

// Backward, dQ. Grid as the forward. Regions: own_qk = Q rows, own_v = dout
// rows, tile_qk = K tile, tile_v = V tile; per warp s = logits, s2 = dP,
// w = dS, o = staging of dQ.
template <int kDim>
__global__ void __launch_bounds__(kThreads)
    BackwardQueryKernel(FusedAttentionParams p, const float* __restrict__ q,
                        const float* __restrict__ k, const float* __restrict__ v,
                        const float* __restrict__ lse, const float* __restrict__ dout,
                        const float* __restrict__ row_dot, float* __restrict__ dq) {
#if TVLAB_TENSOR_CORE_BODY
  TVLAB_DYNAMIC_SHARED_BYTES(smem);
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int hsp = Pad16(hs), hvp = Pad16(hv);
  const SharedLayout L(hsp, hvp, TcKernel::kQuery);
  const int64_t T = p.queries, S = p.keys;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bf16* sQ = reinterpret_cast<bf16*>(smem + L.own_qk);   // (64, hsp)
  bf16* sdO = reinterpret_cast<bf16*>(smem + L.own_v);   // (64, hvp)
  bf16* sK = reinterpret_cast<bf16*>(smem + L.tile_qk);  // (64, hsp)
  bf16* sV = reinterpret_cast<bf16*>(smem + L.tile_v);   // (64, hvp)
  unsigned char* mine = smem + L.warps + warp * L.warp_bytes;
  float* sS = reinterpret_cast<float*>(mine + L.warp_s);    // (16, 64) logits
  float* sdP = reinterpret_cast<float*>(mine + L.warp_s2);  // (16, 64) dout . v
  bf16* sdS = reinterpret_cast<bf16*>(mine + L.warp_w);     // (16, 64)
  float* sOut = reinterpret_cast<float*>(mine + L.warp_o);  // (16, hsp) staging

  const int64_t q_tiles = (T + kBlockRows - 1) / kBlockRows;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t i0 = (blockIdx.x % q_tiles) * kBlockRows;
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t g = h / (p.heads / p.kv_heads);
  const float* kbg = k + (b * p.kv_heads + g) * S * hs;
  const float* vbg = v + (b * p.kv_heads + g) * S * hv;

  StageBf16(q + bh * T * hs, i0, T, kBlockRows, hs, hsp, sQ, L.qk_pitch);
  StageBf16(dout + bh * T * hv, i0, T, kBlockRows, hv, hvp, sdO, L.v_pitch);
  const int64_t block_begin = VisibleBegin(p, b, i0);  // a window's band starts here
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kBlockRows, T) - 1);

  const int r = lane / 2, half = lane % 2;
  const int64_t i = i0 + warp * kRows + r;
  const float row_lse = i < T ? lse[bh * T + i] : -INFINITY;
  const float row_d = i < T ? row_dot[bh * T + i] : 0.0f;
  const int64_t row_end = row_lse == -INFINITY ? 0 : VisibleEnd(p, b, i);

  FragC acc[kDim / 16];
#pragma unroll
  for (int n = 0; n < kDim / 16; ++n) wmma::fill_fragment(acc[n], 0.0f);

  for (int64_t j0 = block_begin; j0 < block_end; j0 += kCols) {
    __syncthreads();
    StageBf16(kbg, j0, S, kCols, hs, hsp, sK, L.qk_pitch);
    StageBf16(vbg, j0, S, kCols, hv, hvp, sV, L.v_pitch);
    __syncthreads();

    RowsTimesTileT(sQ + warp * kRows * L.qk_pitch, L.qk_pitch, sK, L.qk_pitch, hsp, sS,
                   L.s_pitch);
    RowsTimesTileT(sdO + warp * kRows * L.v_pitch, L.v_pitch, sV, L.v_pitch, hvp, sdP,
                   L.s_pitch);
    __syncwarp();
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const int64_t j = j0 + c;
      float ds = 0.0f;
      if (Visible(p, b, i, j, row_end)) {
        const float logit = Logit(p, sS[r * L.s_pitch + c], h, i, j);
        const float prob = expf(logit - row_lse);
        ds = prob * (Keep(p, bh * T + i, j) * sdP[r * L.s_pitch + c] - row_d) * p.scale *
             SoftCapSlope(p, logit);
      }
      sdS[r * L.w_pitch + c] = ToBf16(ds);
    }
    __syncwarp();
    AccumulateWeightsTimesTile<kDim>(acc, sdS, L.w_pitch, sK, L.qk_pitch, hsp);
  }

  StoreRows<kDim>(acc, hs, sOut, L.o_pitch, dq + bh * T * hs, i0 + warp * kRows,
                  T - (i0 + warp * kRows));
#endif  // TVLAB_TENSOR_CORE_BODY
}

#if TVLAB_TENSOR_CORE_BODY

// For this lane's key j (row r of the warp's 16) and its half of the 64
// queries of the tile (column c = query i0 + c of head h): the weight
// W = P M and dS = P (M dP - D) scale in bf16, from the logits' dot products
// srow, dP = v . dout in dprow, and the queries' lse and D; 0 where query
// and key do not meet (or the query saw no key).
__device__ __forceinline__ void KeyValueWeightsHalfRow(const FusedAttentionParams& p, int64_t b,
                                                       int64_t h, int64_t i0, int64_t j,
                                                       int half, const float* srow,
                                                       const float* dprow, const float* sLse,
                                                       const float* sD, bf16* wrow,
                                                       bf16* dsrow) {
  const int64_t first_row = (b * p.heads + h) * p.queries;  // (b, h, query 0)
  for (int c = half * 32; c < half * 32 + 32; ++c) {
    const int64_t ii = i0 + c;  // the query of column c
    float w = 0.0f, ds = 0.0f;
    if (sLse[c] != -INFINITY && Visible(p, b, ii, j, VisibleEnd(p, b, ii))) {
      const float logit = Logit(p, srow[c], h, ii, j);
      const float prob = expf(logit - sLse[c]);
      const float keep = Keep(p, first_row + ii, j);
      w = prob * keep;
      ds = prob * (keep * dprow[c] - sD[c]) * p.scale * SoftCapSlope(p, logit);
    }
    wrow[c] = ToBf16(w);
    dsrow[c] = ToBf16(ds);
  }
}

#endif  // TVLAB_TENSOR_CORE_BODY

// Backward, dK and dV. Grid: B * G * ceil(S / 64) blocks; a block owns 64
// keys of one (b, g) and sweeps the queries of every query head of the
// group in tiles of 64. Regions: own_qk = K rows, own_v = V rows, tile_qk =
// Q tile, tile_v = dout tile, stats = the tile's lse and D; per warp s =
// logits (keys x queries), s2 = dP^T, w = (P M)^T, w2 = dS^T, o = staging.
template <int kDim>
__global__ void __launch_bounds__(kThreads)
    BackwardKeyValueKernel(FusedAttentionParams p, const float* __restrict__ q,
                           const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ lse, const float* __restrict__ dout,
                           const float* __restrict__ row_dot, float* __restrict__ dk,
                           float* __restrict__ dv) {
#if TVLAB_TENSOR_CORE_BODY
  TVLAB_DYNAMIC_SHARED_BYTES(smem);
  const int hs = static_cast<int>(p.head_dim), hv = static_cast<int>(p.value_dim);
  const int hsp = Pad16(hs), hvp = Pad16(hv);
  const SharedLayout L(hsp, hvp, TcKernel::kKeyValue);
  const int64_t T = p.queries, S = p.keys;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  bf16* sK = reinterpret_cast<bf16*>(smem + L.own_qk);    // (64, hsp) owned keys
  bf16* sV = reinterpret_cast<bf16*>(smem + L.own_v);     // (64, hvp) owned values
  bf16* sQ = reinterpret_cast<bf16*>(smem + L.tile_qk);   // (64, hsp) query tile
  bf16* sdO = reinterpret_cast<bf16*>(smem + L.tile_v);   // (64, hvp) dout tile
  float* sLse = reinterpret_cast<float*>(smem + L.stats);  // (64)
  float* sD = sLse + kCols;                                // (64)
  unsigned char* mine = smem + L.warps + warp * L.warp_bytes;
  float* sS = reinterpret_cast<float*>(mine + L.warp_s);    // (16, 64) logits^T
  float* sdP = reinterpret_cast<float*>(mine + L.warp_s2);  // (16, 64) v . dout
  bf16* sW = reinterpret_cast<bf16*>(mine + L.warp_w);      // (16, 64) (P M)^T
  bf16* sdS = reinterpret_cast<bf16*>(mine + L.warp_w2);    // (16, 64) dS^T
  float* sOut = reinterpret_cast<float*>(mine + L.warp_o);  // (16, max) staging

  const int64_t k_tiles = (S + kBlockRows - 1) / kBlockRows;
  const int64_t bg = blockIdx.x / k_tiles;                    // b * G + g
  const int64_t j0 = (blockIdx.x % k_tiles) * kBlockRows;     // first owned key
  const int64_t b = bg / p.kv_heads, g = bg % p.kv_heads;
  const int64_t group = p.heads / p.kv_heads;

  StageBf16(k + bg * S * hs, j0, S, kBlockRows, hs, hsp, sK, L.qk_pitch);
  StageBf16(v + bg * S * hv, j0, S, kBlockRows, hv, hvp, sV, L.v_pitch);

  FragC dk_acc[kDim / 16], dv_acc[kDim / 16];
#pragma unroll
  for (int n = 0; n < kDim / 16; ++n) {
    wmma::fill_fragment(dk_acc[n], 0.0f);
    wmma::fill_fragment(dv_acc[n], 0.0f);
  }

  // As in the fp32 kernel: queries outside [q_begin, q_end) see none of the
  // owned keys (QueryRange).
  int64_t q_begin = 0, q_end = T;
  QueryRange(p, b, j0, j0 + kBlockRows - 1, &q_begin, &q_end);

  const int r = lane / 2, half = lane % 2;
  const int64_t j = j0 + warp * kRows + r;  // this lane's key
  for (int64_t h = g * group; h < (g + 1) * group; ++h) {
    const int64_t bh = b * p.heads + h;
    for (int64_t i0 = q_begin; i0 < q_end; i0 += kCols) {
      __syncthreads();
      StageBf16(q + bh * T * hs, i0, T, kCols, hs, hsp, sQ, L.qk_pitch);
      StageBf16(dout + bh * T * hv, i0, T, kCols, hv, hvp, sdO, L.v_pitch);
      if (threadIdx.x < kCols) {
        const int64_t ii = i0 + threadIdx.x;
        sLse[threadIdx.x] = ii < T ? lse[bh * T + ii] : -INFINITY;
        sD[threadIdx.x] = ii < T ? row_dot[bh * T + ii] : 0.0f;
      }
      __syncthreads();

      RowsTimesTileT(sK + warp * kRows * L.qk_pitch, L.qk_pitch, sQ, L.qk_pitch, hsp, sS,
                     L.s_pitch);
      RowsTimesTileT(sV + warp * kRows * L.v_pitch, L.v_pitch, sdO, L.v_pitch, hvp, sdP,
                     L.s_pitch);
      __syncwarp();
      KeyValueWeightsHalfRow(p, b, h, i0, j, half, sS + r * L.s_pitch, sdP + r * L.s_pitch,
                             sLse, sD, sW + r * L.w_pitch, sdS + r * L.w_pitch);
      __syncwarp();
      AccumulateWeightsTimesTile<kDim>(dv_acc, sW, L.w_pitch, sdO, L.v_pitch, hvp);
      AccumulateWeightsTimesTile<kDim>(dk_acc, sdS, L.w_pitch, sQ, L.qk_pitch, hsp);
    }
  }

  // Every owned key row is written (zeros where no query saw it).
  const int64_t first = j0 + warp * kRows;
  StoreRows<kDim>(dk_acc, hs, sOut, L.o_pitch, dk + bg * S * hs, first, S - first);
  StoreRows<kDim>(dv_acc, hv, sOut, L.o_pitch, dv + bg * S * hv, first, S - first);
#endif  // TVLAB_TENSOR_CORE_BODY
}

}  // namespace tc
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_BACKWARD_CUH_
