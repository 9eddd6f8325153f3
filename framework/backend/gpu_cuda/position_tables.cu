// Attention mask biases and position-encoding tables, one thread per entry,
// and RoPE's turn by its table, one thread per pair.
// Per-row and per-head host values are passed by value in chunks of
// kChunk (kernel arguments), one launch per chunk.

#include <cuda_runtime.h>

#include "framework/backend/gpu_cuda/kernel_util.cuh"
#include "framework/backend/gpu_cuda/launch.cuh"
#include "framework/backend/gpu_cuda/position_tables.h"

namespace tvlab {
namespace {

using cuda_util::GlobalIndex;
using cuda_util::GridFor;
using cuda_util::GridStride;
using cuda_util::kThreads;

constexpr int kChunk = 64;  // rows / heads per launch (well under the 4 KB argument limit)

struct KeyLengths {
  int64_t value[kChunk];
};
struct Slopes {
  double value[kChunk];
};

// out points at the chunk's first row; padded = false: every key is real.
__global__ void MaskBiasKernel(bool causal, int64_t causal_offset, int64_t window,
                               KeyLengths lengths, bool padded, int64_t rows, int64_t t,
                               int64_t s, float* out) {
  const int64_t n = rows * t * s;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t j = idx % s, i = (idx / s) % t, r = idx / (s * t);
    const bool future = causal && j > causal_offset + i;
    const bool padding = padded && j >= lengths.value[r];
    const int64_t distance = causal_offset + i - j;  // query position minus key position
    const bool outside = window > 0 && (distance >= window || -distance >= window);
    out[idx] = future || padding || outside ? -INFINITY : 0.0f;
  }
}

// Hides, in out (R, 1, T, S), every key outside its query's document
// [begin[r*T + i], end[r*T + i]) (device tables, one entry per query).
__global__ void DocumentMaskKernel(const int32_t* begin, const int32_t* end, int64_t rows,
                                   int64_t t, int64_t s, float* out) {
  const int64_t n = rows * t * s;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t j = idx % s, query = idx / s;  // query = r * T + i
    if (j < begin[query] || j >= end[query]) out[idx] = -INFINITY;
  }
}

__global__ void RotaryKernel(int64_t offset, int64_t t, int64_t d, double base, float* cos_out,
                             float* sin_out) {
  const int64_t half = d / 2, n = t * half;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t p = idx / half, i = idx % half;
    const double angle = static_cast<double>(offset + p) *
                         pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    cos_out[idx] = static_cast<float>(cos(angle));
    sin_out[idx] = static_cast<float>(sin(angle));
  }
}

// One thread per pair: rows * T * D/2 of them. __fmul_rn and friends keep
// nvcc from contracting the products into FMAs (the contract rounds each).
__global__ void RotaryTurnKernel(const float* x, const float* cos_table, const float* sin_table, float* y,
                                 int64_t rows, int64_t t, int64_t heads, int64_t d, bool interleaved,
                                 bool inverse) {
  const int64_t half = d / 2, n = rows * t * heads * half;
  const int64_t step = interleaved ? 2 : 1, partner = interleaved ? 1 : half;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t i = idx % half, row = idx / half, p = row / heads % t;
    const float c = cos_table[p * half + i], s = inverse ? -sin_table[p * half + i] : sin_table[p * half + i];
    const int64_t first = row * d + step * i;
    const float a = x[first], b = x[first + partner];
    const float ac = __fmul_rn(a, c), bs = __fmul_rn(b, s), as = __fmul_rn(a, s), bc = __fmul_rn(b, c);
    y[first] = __fsub_rn(ac, bs);
    y[first + partner] = __fadd_rn(as, bc);
  }
}

__global__ void SinusoidalKernel(int64_t offset, int64_t t, int64_t c, double base, float* out) {
  const int64_t pairs = c / 2, n = t * pairs;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t p = idx / pairs, i = 2 * (idx % pairs);
    const double angle = static_cast<double>(offset + p) /
                         pow(base, static_cast<double>(i) / static_cast<double>(c));
    out[p * c + i] = static_cast<float>(sin(angle));
    out[p * c + i + 1] = static_cast<float>(cos(angle));
  }
}

// out points at the chunk's first head.
__global__ void AlibiKernel(Slopes slopes, int64_t heads, int64_t q_offset, int64_t t, int64_t s,
                            float* out) {
  const int64_t n = heads * t * s;
  for (int64_t idx = GlobalIndex(); idx < n; idx += GridStride()) {
    const int64_t j = idx % s, i = (idx / s) % t, h = idx / (s * t);
    const int64_t distance = q_offset + i - j;
    out[idx] = static_cast<float>(-slopes.value[h] *
                                  static_cast<double>(distance < 0 ? -distance : distance));
  }
}

}  // namespace

int LaunchAttentionMaskBias(bool causal, int64_t causal_offset, int64_t window,
                            const int64_t* key_lengths, int64_t rows, int64_t t, int64_t s,
                            float* out) {
  if (t <= 0 || s <= 0) return 0;
  for (int64_t first = 0; first < rows; first += kChunk) {
    const int64_t count = rows - first < kChunk ? rows - first : kChunk;
    KeyLengths lengths{};
    if (key_lengths)
      for (int64_t r = 0; r < count; ++r) lengths.value[r] = key_lengths[first + r];
    TVLAB_LAUNCH(GridFor(count * t * s), kThreads, 0, 0, MaskBiasKernel)(
        causal, causal_offset, window, lengths, key_lengths != nullptr, count, t, s,
        out + first * t * s);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return static_cast<int>(err);
  }
  return 0;
}

int LaunchDocumentMask(const int32_t* begin, const int32_t* end, int64_t rows, int64_t t,
                       int64_t s, float* out) {
  if (rows <= 0 || t <= 0 || s <= 0) return 0;
  TVLAB_LAUNCH(GridFor(rows * t * s), kThreads, 0, 0, DocumentMaskKernel)(begin, end, rows, t, s,
                                                                           out);
  return static_cast<int>(cudaGetLastError());
}

int LaunchRotaryTables(int64_t offset, int64_t t, int64_t d, double base, float* cos,
                       float* sin) {
  if (t <= 0 || d < 2) return 0;
  TVLAB_LAUNCH(GridFor(t * (d / 2)), kThreads, 0, 0, RotaryKernel)(offset, t, d, base, cos, sin);
  return static_cast<int>(cudaGetLastError());
}

int LaunchRotary(const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t t,
                 int64_t heads, int64_t d, bool interleaved, bool inverse) {
  if (rows <= 0 || t <= 0 || heads <= 0 || d < 2) return 0;
  TVLAB_LAUNCH(GridFor(rows * t * heads * (d / 2)), kThreads, 0, 0, RotaryTurnKernel)(x, cos, sin, y, rows, t,
                                                                                      heads, d, interleaved,
                                                                                      inverse);
  return static_cast<int>(cudaGetLastError());
}

int LaunchSinusoidalTable(int64_t offset, int64_t t, int64_t c, double base, float* out) {
  if (t <= 0 || c < 2) return 0;
  TVLAB_LAUNCH(GridFor(t * (c / 2)), kThreads, 0, 0, SinusoidalKernel)(offset, t, c, base, out);
  return static_cast<int>(cudaGetLastError());
}

int LaunchAlibiBias(const double* slopes, int64_t heads, int64_t q_offset, int64_t t, int64_t s,
                    float* out) {
  if (t <= 0 || s <= 0) return 0;
  for (int64_t first = 0; first < heads; first += kChunk) {
    const int64_t count = heads - first < kChunk ? heads - first : kChunk;
    Slopes chunk{};
    for (int64_t h = 0; h < count; ++h) chunk.value[h] = slopes[first + h];
    TVLAB_LAUNCH(GridFor(count * t * s), kThreads, 0, 0, AlibiKernel)(chunk, count, q_offset, t, s,
                                                                     out + first * t * s);
    if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return static_cast<int>(err);
  }
  return 0;
}

}  // namespace tvlab
