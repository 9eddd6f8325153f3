#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_BLOCKS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_BLOCKS_H_

// The products of the AVX-512 tiled attention kernel
// (tiled_attention_avx512.h), each a block of sums kept in registers over
// operands a key/value head's panels hold side by side:
//   Scores:        s (rows, cols)  = alpha * x (rows, depth) @ xt (depth, cols)
//                  (q @ k^T from the keys' transposed panel, dout @ v^T)
//   WeightedRows:  out (rows, D)   = (w (rows, keys) @ x (keys, D)) * scale
//                  (weights @ v, ds @ k)
//   AddToKeys:     acc (keys, D)  += w^T (keys, rows) @ x (rows, D)
//                  (dv += weights^T @ dout, dk += ds^T @ q)
// Every output is a sum in order over its terms, one fused multiply-add a
// term, so every thread count computes the same bits. Only
// tiled_attention_avx512.cc includes it.

#include <immintrin.h>

#include <cstdint>

#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"

namespace tvlab {
namespace onednn {
namespace tiled_avx512 {

using short_avx512::kLanes;

// s row r, columns [16 v, 16 v + 16) for v < V, rows r < R: alpha * (row r
// of x, ldx apart) . (columns of xt, rows ldt apart), over `depth` terms.
template <int R, int V>
TVLAB_AVX512_INLINE void ScoreBlock(const float* x, int64_t ldx, const float* xt, int64_t ldt, int64_t depth,
                                    float alpha, float* s, int64_t lds) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t e = 0; e < depth; ++e) {
    __m512 column[V];
    for (int v = 0; v < V; ++v) column[v] = _mm512_loadu_ps(xt + e * ldt + v * kLanes);
    for (int r = 0; r < R; ++r) {
      const __m512 xe = _mm512_set1_ps(x[r * ldx + e]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(xe, column[v], acc[r][v]);
    }
  }
  const __m512 a = _mm512_set1_ps(alpha);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(s + r * lds + v * kLanes, _mm512_mul_ps(a, acc[r][v]));
}

// Columns [c0, c1) (multiples of 16) of s for R rows, two vectors at a
// time (eight rows x two vectors ran 5% faster than four x four at the GPT
// config's shape; packing the rows for one pointer, three vectors, or the
// columns outside the rows gained nothing).
template <int R>
TVLAB_AVX512_INLINE void ScoreRows(const float* x, int64_t ldx, const float* xt, int64_t ldt, int64_t depth,
                                   float alpha, int64_t c0, int64_t c1, float* s, int64_t lds) {
  int64_t c = c0;
  for (; c + 2 * kLanes <= c1; c += 2 * kLanes) ScoreBlock<R, 2>(x, ldx, xt + c, ldt, depth, alpha, s + c, lds);
  if (c < c1) ScoreBlock<R, 1>(x, ldx, xt + c, ldt, depth, alpha, s + c, lds);
}

// s (rows, columns [c0, c1)) = alpha * x @ xt: eight rows at a time.
TVLAB_AVX512 void Scores(const float* x, int64_t ldx, int64_t rows, const float* xt, int64_t ldt,
                         int64_t depth, float alpha, int64_t c0, int64_t c1, float* s, int64_t lds) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) ScoreRows<8>(x + r * ldx, ldx, xt, ldt, depth, alpha, c0, c1, s + r * lds, lds);
  for (; r < rows; ++r) ScoreRows<1>(x + r * ldx, ldx, xt, ldt, depth, alpha, c0, c1, s + r * lds, lds);
}

// out row r (ldo apart) = scale[r] * sum over keys j in [j0, j1) of
// w[r][j] * x[j] (x's rows of V vectors side by side), for R rows.
template <int R, int V>
TVLAB_AVX512_INLINE void WeightedBlock(const float* w, int64_t ldw, const float* x, int64_t j0, int64_t j1,
                                       const float* scale, float* out, int64_t ldo) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t j = j0; j < j1; ++j) {
    __m512 row[V];
    for (int v = 0; v < V; ++v) row[v] = _mm512_loadu_ps(x + j * V * kLanes + v * kLanes);
    for (int r = 0; r < R; ++r) {
      const __m512 wj = _mm512_set1_ps(w[r * ldw + j]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(wj, row[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512 sr = _mm512_set1_ps(scale == nullptr ? 1.0f : scale[r]);
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(out + r * ldo + v * kLanes, _mm512_mul_ps(sr, acc[r][v]));
  }
}

// WeightedBlock for `rows` rows, eight (or four, for V 4) at a time.
template <int V>
TVLAB_AVX512 void WeightedRows(const float* w, int64_t ldw, int64_t rows, const float* x, int64_t j0, int64_t j1,
                               const float* scale, float* out, int64_t ldo) {
  constexpr int kR = V >= 4 ? 4 : 8;
  int64_t r = 0;
  for (; r + kR <= rows; r += kR)
    WeightedBlock<kR, V>(w + r * ldw, ldw, x, j0, j1, scale ? scale + r : nullptr, out + r * ldo, ldo);
  for (; r < rows; ++r)
    WeightedBlock<1, V>(w + r * ldw, ldw, x, j0, j1, scale ? scale + r : nullptr, out + r * ldo, ldo);
}

// acc row j (V vectors side by side) += sum over rows i < t of w[i][j] *
// x row i (ldx apart), for the J keys from j.
template <int J, int V>
TVLAB_AVX512_INLINE void AddKeyBlock(const float* w, int64_t ldw, int64_t t, const float* x, int64_t ldx,
                                     int64_t j, float* acc) {
  __m512 sum[J][V];
  for (int jj = 0; jj < J; ++jj)
    for (int v = 0; v < V; ++v) sum[jj][v] = _mm512_loadu_ps(acc + (j + jj) * V * kLanes + v * kLanes);
  for (int64_t i = 0; i < t; ++i) {
    __m512 xi[V];
    for (int v = 0; v < V; ++v) xi[v] = _mm512_loadu_ps(x + i * ldx + v * kLanes);
    for (int jj = 0; jj < J; ++jj) {
      const __m512 wij = _mm512_set1_ps(w[i * ldw + j + jj]);
      for (int v = 0; v < V; ++v) sum[jj][v] = _mm512_fmadd_ps(wij, xi[v], sum[jj][v]);
    }
  }
  for (int jj = 0; jj < J; ++jj)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(acc + (j + jj) * V * kLanes + v * kLanes, sum[jj][v]);
}

// AddKeyBlock for the keys [j0, j1), eight (or four, for V 4) at a time.
template <int V>
TVLAB_AVX512 void AddToKeys(const float* w, int64_t ldw, int64_t t, const float* x, int64_t ldx, int64_t j0,
                            int64_t j1, float* acc) {
  constexpr int kJ = V >= 4 ? 4 : 8;
  int64_t j = j0;
  for (; j + kJ <= j1; j += kJ) AddKeyBlock<kJ, V>(w, ldw, t, x, ldx, j, acc);
  for (; j < j1; ++j) AddKeyBlock<1, V>(w, ldw, t, x, ldx, j, acc);
}

}  // namespace tiled_avx512
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_BLOCKS_H_
