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
// term, so every thread count computes the same bits. Each product skips
// the terms whose weight is a hidden key's zero (RowKeys below): adding a
// zero product leaves a sum that starts from +0 as it was, so for finite
// operands the bits are those of the whole block's sums. Only
// tiled_attention_avx512.cc includes it.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "framework/backend/cpu_onednn/short_attention_avx512_lanes.h"

namespace tvlab {
namespace onednn {
namespace tiled_avx512 {

using short_avx512::kLanes;

// The keys each row of a query block may see: row r, [first[r], end[r])
// (none where first[r] >= end[r]). Both ends never decrease with r
// (attention_mask.h), so the rows that see any of a run of keys are
// consecutive. On the causal diagonal a block's rows see ever more keys:
// a product over the keys the whole block sees did about 11% more
// multiply-adds than the visible ones at T 256 (the GPT config).
struct RowKeys {
  const int64_t* first;
  const int64_t* end;

  // The keys rows [r0, r1) see between them: [*lo, *hi), empty (0, 0) if none.
  void Union(int64_t r0, int64_t r1, int64_t* lo, int64_t* hi) const {
    *lo = 0, *hi = 0;
    bool any = false;
    for (int64_t r = r0; r < r1; ++r) {
      if (first[r] >= end[r]) continue;
      *lo = any ? std::min(*lo, first[r]) : first[r];
      *hi = any ? std::max(*hi, end[r]) : end[r];
      any = true;
    }
  }
  // Rows [*lo, *hi) of [0, rows): every row that sees any of keys [j0,
  // j1), perhaps with rows between that see none of them (their weights
  // there are zeros). The two carry over from the call before, made for
  // keys no later (start both at 0): as the keys move on, so do the rows.
  void AdvanceRowsSeeing(int64_t rows, int64_t j0, int64_t j1, int64_t* lo, int64_t* hi) const {
    while (*lo < rows && end[*lo] <= j0) ++*lo;
    while (*hi < rows && first[*hi] < j1) ++*hi;
  }
};

// The rows of x a Scores group takes (eight, or one at the block's end),
// and the whole vectors [*c0, *c1) holding the keys they see (empty: none).
inline int64_t ScoreGroup(const RowKeys& keys, int64_t r, int64_t rows, int64_t* c0, int64_t* c1) {
  const int64_t n = rows - r >= 8 ? 8 : 1;
  int64_t lo, hi;
  keys.Union(r, r + n, &lo, &hi);
  *c0 = lo / kLanes * kLanes;
  *c1 = lo < hi ? (hi + kLanes - 1) / kLanes * kLanes : *c0;
  return n;
}

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
// columns outside the rows gained nothing). Not inlined: inlined into
// Scores' loop over row groups, GCC kept one of the two vectors on the
// stack (the GPT shape's Scores 4% slower).
template <int R>
__attribute__((target("avx512f"), noinline)) void ScoreRows(const float* x, int64_t ldx, const float* xt,
                                                            int64_t ldt, int64_t depth, float alpha, int64_t c0,
                                                            int64_t c1, float* s, int64_t lds) {
  int64_t c = c0;
  for (; c + 2 * kLanes <= c1; c += 2 * kLanes) ScoreBlock<R, 2>(x, ldx, xt + c, ldt, depth, alpha, s + c, lds);
  if (c < c1) ScoreBlock<R, 1>(x, ldx, xt + c, ldt, depth, alpha, s + c, lds);
}

// s = alpha * x @ xt for `rows` rows, eight at a time (ScoreGroup), each
// group over the vectors holding the keys its rows see: a row's other
// columns are left as they were (ExpRow reads only its own row's vectors;
// LogitGradients zeroes them).
TVLAB_AVX512 void Scores(const float* x, int64_t ldx, int64_t rows, const float* xt, int64_t ldt,
                         int64_t depth, float alpha, const RowKeys& keys, float* s, int64_t lds) {
  int64_t c0, c1;
  for (int64_t r = 0, n; r < rows; r += n) {
    n = ScoreGroup(keys, r, rows, &c0, &c1);
    if (n == 8) {
      ScoreRows<8>(x + r * ldx, ldx, xt, ldt, depth, alpha, c0, c1, s + r * lds, lds);
    } else {
      ScoreRows<1>(x + r * ldx, ldx, xt, ldt, depth, alpha, c0, c1, s + r * lds, lds);
    }
  }
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

// WeightedBlock for `rows` rows, eight (or four, for V 4) at a time, each
// group over the keys its rows see (a group that sees none: zeros).
template <int V>
TVLAB_AVX512 void WeightedRows(const float* w, int64_t ldw, int64_t rows, const float* x, const RowKeys& keys,
                               const float* scale, float* out, int64_t ldo) {
  constexpr int kR = V >= 4 ? 4 : 8;
  int64_t r = 0, j0, j1;
  for (; r + kR <= rows; r += kR) {
    keys.Union(r, r + kR, &j0, &j1);
    WeightedBlock<kR, V>(w + r * ldw, ldw, x, j0, j1, scale ? scale + r : nullptr, out + r * ldo, ldo);
  }
  for (; r < rows; ++r) {
    keys.Union(r, r + 1, &j0, &j1);
    WeightedBlock<1, V>(w + r * ldw, ldw, x, j0, j1, scale ? scale + r : nullptr, out + r * ldo, ldo);
  }
}

// acc row j (V vectors side by side) += sum over rows i in [i0, i1) of
// w[i][j] * x row i (ldx apart), for the J keys from j.
template <int J, int V>
TVLAB_AVX512_INLINE void AddKeyBlock(const float* w, int64_t ldw, int64_t i0, int64_t i1, const float* x,
                                     int64_t ldx, int64_t j, float* acc) {
  __m512 sum[J][V];
  for (int jj = 0; jj < J; ++jj)
    for (int v = 0; v < V; ++v) sum[jj][v] = _mm512_loadu_ps(acc + (j + jj) * V * kLanes + v * kLanes);
  for (int64_t i = i0; i < i1; ++i) {
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

// AddKeyBlock for the keys [j0, j1), eight (or four, for V 4) at a time,
// each over the rows among the t that see any of its keys.
template <int V>
TVLAB_AVX512 void AddToKeys(const float* w, int64_t ldw, int64_t t, const float* x, int64_t ldx, int64_t j0,
                            int64_t j1, const RowKeys& keys, float* acc) {
  constexpr int kJ = V >= 4 ? 4 : 8;
  int64_t j = j0, i0 = 0, i1 = 0;
  for (; j + kJ <= j1; j += kJ) {
    keys.AdvanceRowsSeeing(t, j, j + kJ, &i0, &i1);
    AddKeyBlock<kJ, V>(w, ldw, i0, i1, x, ldx, j, acc);
  }
  for (; j < j1; ++j) {
    keys.AdvanceRowsSeeing(t, j, j + 1, &i0, &i1);
    AddKeyBlock<1, V>(w, ldw, i0, i1, x, ldx, j, acc);
  }
}

}  // namespace tiled_avx512
}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_AVX512_BLOCKS_H_
