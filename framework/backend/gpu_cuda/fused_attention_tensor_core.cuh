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
// This file holds the constants, the shared-memory plan and the WMMA steps
// the kernels share; the kernels are in fused_attention_tensor_core_forward.cuh
// and fused_attention_tensor_core_backward.cuh. Built from CUDA's WMMA API
// (mma.h) and the built-ins the fp32 kernels use, so that the CPU emulator
// (emulator/cuda_emulator.h, whose include/ has a WMMA of its own) runs these
// very kernels in tests without a GPU.

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
// there (runtime.precision bf16 is refused below 8.0: GpuCudaPrecisionSupport).
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
using fused::QueryRange;
using fused::SoftCapSlope;
using fused::StartMax;
using fused::StartSum;
using fused::Visible;
using fused::VisibleBegin;
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

}  // namespace tc
}  // namespace cuda
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_FUSED_ATTENTION_TENSOR_CORE_CUH_
