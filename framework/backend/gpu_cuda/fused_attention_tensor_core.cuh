#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_CUH_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_CUH_

// Fused attention on tensor cores: the kernels of fused_attention_device.cuh
// (same description, same masks, ALiBi, dropout, GQA/MQA by index, same
// race-free backward split) with the four products QK^T, PV, dO V^T and the
// gradient products done by bf16 WMMA tiles (16 x 16 x 16, fp32
// accumulation). Used for runtime.precision bf16 when both padded head sizes
// are at most 128 (TensorCoreFits); otherwise the fp32 kernels run.
//
// What is rounded to bf16: q, k, v and dout as they are staged into shared
// memory, and the weights P * keep (forward), the weights and dS (backward)
// before they enter a product. Everything else is fp32: the logits, the
// online-softmax max and sum, the log-sum-exp, D = dout . out, and every
// accumulator. Inputs and outputs stay fp32 tensors.
//
// Work split (kWarps = 4 warps per block, each warp owns kRows = 16 rows,
// one WMMA tile high; the swept side comes in tiles of kCols = 64):
// - Forward and dQ: one block per (b, h, 64 queries), sweeping key tiles.
// - dK/dV: one block per (b, kv head g, 64 keys), sweeping the query tiles
//   of every query head of the group; each dK/dV row has one writer, so no
//   atomics and the sums are deterministic (as in the fp32 kernels).
// A warp's logit tile (16 x 64) goes from its accumulator fragments to
// shared memory (the fragment layout is opaque), where the warp's lanes
// apply mask, ALiBi, softmax and dropout: lane l takes row l / 2 and the
// half l % 2 of its 64 columns, so a row's max and sum are one shuffle away.
// The forward's output accumulator lives in shared memory too (rows are
// rescaled by exp(m_old - m_new) between tiles, which needs to know the row
// of every element); dQ, dK and dV accumulate in fragments (no rescaling).
//
// Shared memory rows are padded (bf16 by 8 elements, fp32 by 4) so that
// consecutive rows start in different banks; WMMA needs a leading dimension
// that is a multiple of 16 bytes and 32-byte aligned tile pointers, which
// these pitches and the 128-byte-aligned regions give.
//
// Built from CUDA's WMMA API (mma.h) and the built-ins the fp32 kernels use,
// so that the CPU emulator (emulator/cuda_emulator.h, whose include/ has a
// WMMA of its own) runs these very kernels in tests without a GPU.

#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "framework/backend/gpu_cuda/fused_attention_device.cuh"
#include "framework/backend/gpu_cuda/fused_attention_kernel.h"

#ifndef TVLAB_DYNAMIC_SHARED_BYTES
#define TVLAB_DYNAMIC_SHARED_BYTES(name) extern __shared__ __align__(128) unsigned char name[]
#endif

// bf16 WMMA needs compute capability 8.0. A device pass for an older
// architecture compiles the kernels empty; the launcher never starts them
// there (runtime.precision bf16 is refused below 8.0: SupportsPrecision).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TVLAB_TENSOR_CORE_BODY 1
#else
#define TVLAB_TENSOR_CORE_BODY 0
#endif

namespace tvlab {
namespace cuda {
namespace tc {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16;                      // rows per warp: one WMMA tile
constexpr int kBlockRows = kWarps * kRows;     // owned rows per block: 64
constexpr int kCols = 64;                      // swept rows per step
constexpr int kMaxDim = 128;                   // largest padded head size
constexpr int kHalfPad = 8, kFloatPad = 4;     // row padding (elements)

// n rounded up to a multiple of 16 (a WMMA tile edge).
TVLAB_HOST_DEVICE constexpr int Pad16(int64_t n) { return static_cast<int>((n + 15) / 16 * 16); }

// Whether the tensor-core kernels take `p` (bf16 asked for, head sizes that
// fit the shared memory plan), and the template's width for it.
inline bool TensorCoreFits(const FusedAttentionParams& p) {
  return p.bf16 && Pad16(p.head_dim) <= kMaxDim && Pad16(p.value_dim) <= kMaxDim;
}
inline int TemplateDim(const FusedAttentionParams& p) {
  return Pad16(p.head_dim) <= 64 && Pad16(p.value_dim) <= 64 ? 64 : kMaxDim;
}

TVLAB_HOST_DEVICE constexpr int64_t Align128(int64_t bytes) { return (bytes + 127) / 128 * 128; }

enum class TcKernel { kForward, kQuery, kKeyValue };

// Byte offsets of the shared-memory regions (the launcher sizes the launch
// with `bytes`, the kernel carves its pointers with the offsets). hsp, hvp:
// the head sizes padded to 16. Per-warp regions are kWarps consecutive
// copies of `warp_bytes`. A region a kernel does not use has no bytes.
struct SharedLayout {
  int qk_pitch, v_pitch;  // bf16 rows of (hsp) and (hvp) columns
  int s_pitch, w_pitch;   // fp32 and bf16 rows of kCols columns
  int o_pitch;            // fp32 rows of max(hsp, hvp) columns
  int64_t own_qk, own_v, tile_qk, tile_v, stats;  // block-wide regions
  int64_t warp_s, warp_s2, warp_w, warp_w2, warp_o, warp_bytes;  // offsets inside a warp's part
  int64_t warps, bytes;

  TVLAB_HOST_DEVICE SharedLayout(int hsp, int hvp, TcKernel kernel) {
    const bool fwd = kernel == TcKernel::kForward, kv = kernel == TcKernel::kKeyValue;
    qk_pitch = hsp + kHalfPad, v_pitch = hvp + kHalfPad;
    s_pitch = kCols + kFloatPad, w_pitch = kCols + kHalfPad;
    o_pitch = (hsp > hvp ? hsp : hvp) + kFloatPad;
    const int64_t half = 2, flt = 4;
    own_qk = 0;                                                     // (64, hsp) bf16
    own_v = own_qk + Align128(kBlockRows * qk_pitch * half);        // (64, hvp) bf16
    tile_qk = own_v + (fwd ? 0 : Align128(kBlockRows * v_pitch * half));  // (64, hsp) bf16
    tile_v = tile_qk + Align128(kCols * qk_pitch * half);           // (64, hvp) bf16
    stats = tile_v + Align128(kCols * v_pitch * half);              // 2 x 64 fp32
    warps = stats + (kv ? Align128(2 * kCols * flt) : 0);
    warp_s = 0;                                                     // (16, 64) fp32
    warp_s2 = warp_s + Align128(kRows * s_pitch * flt);             // (16, 64) fp32
    warp_w = warp_s2 + (fwd ? 0 : Align128(kRows * s_pitch * flt)); // (16, 64) bf16
    warp_w2 = warp_w + Align128(kRows * w_pitch * half);            // (16, 64) bf16
    warp_o = warp_w2 + (kv ? Align128(kRows * w_pitch * half) : 0); // (16, max) fp32
    warp_bytes = warp_o + Align128(kRows * o_pitch * flt);
    bytes = warps + kWarps * warp_bytes;
  }
};

#if TVLAB_TENSOR_CORE_BODY

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;
__device__ __forceinline__ bf16 ToBf16(float x) { return __float2bfloat16(x); }

using fused::Keep;
using fused::Logit;
using fused::Max64;
using fused::Min64;
using fused::VisibleEnd;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// dst[r * pitch + c] = bf16(src[(first + r) * cols + c]) for r < rows,
// c < padded; zero past `limit` rows or `cols` columns. All threads of the
// block take part, a warp per row (coalesced reads).
__device__ __forceinline__ void StageBf16(const float* src, int64_t first, int64_t limit,
                                          int rows, int cols, int padded, bf16* dst,
                                          int pitch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < rows; r += kWarps) {
    const bool inside = first + r < limit;
    const float* row = inside ? src + (first + r) * cols : src;
    for (int c = lane; c < padded; c += 32)
      dst[r * pitch + c] = ToBf16(inside && c < cols ? row[c] : 0.0f);
  }
}

// out (16 x 64, fp32, pitch s_pitch) = A (16 x depth) * B^T, A the warp's
// rows of `a` (row-major, pitch a_pitch), B the 64 rows of `b` (row-major,
// pitch b_pitch): the logits q.k or the products dout.v of a tile.
__device__ __forceinline__ void RowsTimesTileT(const bf16* a, int a_pitch, const bf16* b,
                                               int b_pitch, int depth, float* out,
                                               int out_pitch) {
#pragma unroll
  for (int n = 0; n < kCols / 16; ++n) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < depth; kk += 16) {
      FragA fa;
      FragBCol fb;  // B^T's (kk, n) tile: b's rows n*16.., columns kk..
      wmma::load_matrix_sync(fa, a + kk, a_pitch);
      wmma::load_matrix_sync(fb, b + n * 16 * b_pitch + kk, b_pitch);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + n * 16, acc, out_pitch, wmma::mem_row_major);
  }
}

// acc[n] += W (16 x 64, bf16, pitch w_pitch) * X (64 x cols, row-major,
// pitch x_pitch) for the column tiles n * 16 < cols.
template <int kDim>
__device__ __forceinline__ void AccumulateWeightsTimesTile(FragC (&acc)[kDim / 16], const bf16* w,
                                                           int w_pitch, const bf16* x,
                                                           int x_pitch, int cols) {
#pragma unroll
  for (int n = 0; n < kDim / 16; ++n) {
    if (n * 16 >= cols) break;
#pragma unroll
    for (int kk = 0; kk < kCols; kk += 16) {
      FragA fa;
      FragBRow fb;
      wmma::load_matrix_sync(fa, w + kk, w_pitch);
      wmma::load_matrix_sync(fb, x + kk * x_pitch + n * 16, x_pitch);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

// Writes a warp's 16 rows (first global row `row0`, `rows_left` of them
// real) of `cols` columns from fragments through its fp32 staging rows.
template <int kDim>
__device__ __forceinline__ void StoreRows(FragC (&acc)[kDim / 16], int cols, float* stage,
                                          int pitch, float* dst, int64_t row0,
                                          int64_t rows_left) {
#pragma unroll
  for (int n = 0; n < kDim / 16; ++n) {
    if (n * 16 >= cols) break;
    wmma::store_matrix_sync(stage + n * 16, acc[n], pitch, wmma::mem_row_major);
  }
  __syncwarp();
  const int lane = threadIdx.x % 32;
  for (int e = lane; e < kRows * cols; e += 32) {
    const int r = e / cols, c = e % cols;
    if (r < rows_left) dst[(row0 + r) * cols + c] = stage[r * pitch + c];
  }
  __syncwarp();
}

#endif  // TVLAB_TENSOR_CORE_BODY

// ---------------------------------------------------------------------------
// Forward. Grid: B * H * ceil(T / 64) blocks. Regions: own_qk = Q rows,
// tile_qk = K tile, tile_v = V tile; per warp s = logits, w = weights,
// o = output accumulator (16, hvp).
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
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kBlockRows, T) - 1);

  // This lane's row r and column half; its row's running max m and sum l
  // (the two lanes of a row hold the same values).
  const int r = lane / 2, half = lane % 2;
  const int64_t i = i0 + warp * kRows + r;
  const int64_t row_end = i < T ? VisibleEnd(p, b, i) : 0;
  float m = -INFINITY, l = 0.0f;

  for (int64_t j0 = 0; j0 < block_end; j0 += kCols) {
    __syncthreads();  // the previous tiles are consumed
    StageBf16(kbg, j0, S, kCols, hs, hsp, sK, L.qk_pitch);
    StageBf16(vbg, j0, S, kCols, hv, hvp, sV, L.v_pitch);
    __syncthreads();

    // Logits' dot products: (16, hsp) x (hsp, 64).
    RowsTimesTileT(sQ + warp * kRows * L.qk_pitch, L.qk_pitch, sK, L.qk_pitch, hsp, sS,
                   L.s_pitch);
    __syncwarp();

    // Online softmax over this lane's 32 columns of row r.
    float* srow = sS + r * L.s_pitch;
    float tile_max = -INFINITY;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const int64_t j = j0 + c;
      const float s = j < row_end ? Logit(p, srow[c], h, i, j) : -INFINITY;
      srow[c] = s;
      tile_max = fmaxf(tile_max, s);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(fused::kFullMask, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float alpha = m_new == -INFINITY ? 1.0f : expf(m - m_new);  // 0 while m is -inf
    float sum = 0.0f;
    bf16* wrow = sW + r * L.w_pitch;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      const float s = srow[c];
      const float e = s == -INFINITY ? 0.0f : expf(s - m_new);
      sum += e;
      wrow[c] = ToBf16(e == 0.0f ? 0.0f : e * Keep(p, bh * T + i, j0 + c));
    }
    sum += __shfl_xor_sync(fused::kFullMask, sum, 1);
    l = l * alpha + sum;
    m = m_new;
    float* orow = sO + r * L.o_pitch;
    for (int c = half; c < hvp; c += 2) orow[c] *= alpha;
    __syncwarp();

    // O += W V: (16, 64) x (64, hvp), through the accumulator in shared memory.
#pragma unroll
    for (int n = 0; n < kDim / 16; ++n) {
      if (n * 16 >= hvp) break;
      FragC acc;
      wmma::load_matrix_sync(acc, sO + n * 16, L.o_pitch, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kCols; kk += 16) {
        FragA fa;
        FragBRow fb;
        wmma::load_matrix_sync(fa, sW + kk, L.w_pitch);
        wmma::load_matrix_sync(fb, sV + kk * L.v_pitch + n * 16, L.v_pitch);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(sO + n * 16, acc, L.o_pitch, wmma::mem_row_major);
    }
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

// With P the weights recomputed as exp(logit - lse), M the dropout factors
// and D_i = dout_i . out_i (fused::RowDotKernel):
//   dV += (P M)^T dout;  dP = dout V^T;  dS = P (M dP - D) scale;
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
  const int64_t block_end = VisibleEnd(p, b, Min64(i0 + kBlockRows, T) - 1);

  const int r = lane / 2, half = lane % 2;
  const int64_t i = i0 + warp * kRows + r;
  const float row_lse = i < T ? lse[bh * T + i] : -INFINITY;
  const float row_d = i < T ? row_dot[bh * T + i] : 0.0f;
  const int64_t row_end = row_lse == -INFINITY ? 0 : VisibleEnd(p, b, i);

  FragC acc[kDim / 16];
#pragma unroll
  for (int n = 0; n < kDim / 16; ++n) wmma::fill_fragment(acc[n], 0.0f);

  for (int64_t j0 = 0; j0 < block_end; j0 += kCols) {
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
      if (j < row_end) {
        const float prob = expf(Logit(p, sS[r * L.s_pitch + c], h, i, j) - row_lse);
        ds = prob * (Keep(p, bh * T + i, j) * sdP[r * L.s_pitch + c] - row_d) * p.scale;
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

  // As in the fp32 kernel: queries before q_begin see none of the owned
  // keys; keys past the row's length are seen by no query.
  int64_t q_begin = p.causal ? Max64(0, j0 - p.causal_offset) : 0;
  if (p.key_lengths != nullptr && j0 >= p.key_lengths[b]) q_begin = T;

  const int r = lane / 2, half = lane % 2;
  const int64_t j = j0 + warp * kRows + r;  // this lane's key
  for (int64_t h = g * group; h < (g + 1) * group; ++h) {
    const int64_t bh = b * p.heads + h;
    for (int64_t i0 = q_begin; i0 < T; i0 += kCols) {
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
      for (int c = half * 32; c < half * 32 + 32; ++c) {
        const int64_t ii = i0 + c;  // the query of column c
        float w = 0.0f, ds = 0.0f;
        if (sLse[c] != -INFINITY && j < VisibleEnd(p, b, ii)) {
          const float prob = expf(Logit(p, sS[r * L.s_pitch + c], h, ii, j) - sLse[c]);
          const float keep = Keep(p, bh * T + ii, j);
          w = prob * keep;
          ds = prob * (keep * sdP[r * L.s_pitch + c] - sD[c]) * p.scale;
        }
        sW[r * L.w_pitch + c] = ToBf16(w);
        sdS[r * L.w_pitch + c] = ToBf16(ds);
      }
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

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_CUH_
