// cpu_onednn's row kernels (softmax's are in onednn_softmax.cc, the
// normalizations' backward in onednn_normalize_backward.cc): LayerNorm on
// oneDNN's primitive (one thread's rows of a multiple of 16 columns on an
// AVX-512 or AVX2 loop, layer_norm_rows.h, the same bits; RMSNorm, which oneDNN 2.6 lacks, on a vectorised loop) and
// Permute by contiguous rows; rows split over OpenMP threads above
// kParallelElements. ScatterAdd as the reference's loop, vectorised.

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "framework/backend/cpu_onednn/double_lanes.h"
#include "framework/backend/cpu_onednn/layer_norm_rows.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/cpu_features.h"

namespace tvlab {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using onednn::kParallelElements;
using onednn::SingleThreaded;

using onednn::DoubleLanes;

// RMSNorm's rows [first, last) (Normalize without subtract_mean): the
// reference's arithmetic (rstd = 1 / sqrt(mean(x^2) + eps) in double, then
// y = x * rstd * gamma + beta in float, mean 0), with the squares summed in
// eight double lanes (lane l takes the columns l, l + 8, ... below cols
// rounded down to 8, in order), the lanes added ((0+1)+(2+3))+((4+5)+(6+7)),
// then the remaining columns in order: every build the same bits, not the
// reference's (which sums in column order; DoubleLanes). The reference's scalar loop
// took 2.3x LayerNorm's oneDNN primitive (921 against 411 us at 4096 x 256
// on an Intel Xeon).
template <bool kOneVector>
TVLAB_CLONED_LOOP void RmsNormRowsLoop(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                       float* rstd, int64_t first, int64_t last, int64_t cols, float eps) {
  for (int64_t r = first; r < last; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    DoubleLanes<kOneVector> acc;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) acc.AddSquaresOf(xr + c);
    double squares = onednn::TreeSum(acc);
    for (; c < cols; ++c) squares += static_cast<double>(xr[c]) * xr[c];
    const float rs = static_cast<float>(1.0 / std::sqrt(squares / cols + eps));
    mean[r] = 0.0f;
    rstd[r] = rs;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) {
      float v = xr[j] * rs;
      if (gamma) v *= gamma[j];
      if (beta) v += beta[j];
      yr[j] = v;
    }
  }
}

void RmsNormRows(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                 int64_t first, int64_t last, int64_t cols, float eps) {
  RunIsaCloneByWidth<RmsNormRowsLoop<true>, RmsNormRowsLoop<false>>(x, gamma, beta, y, mean, rstd, first, last, cols,
                                                                    eps);
}

}  // namespace

void OnednnBackend::Normalize(const float* x, const float* gamma, const float* beta, float* y,
                              float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                              bool subtract_mean) {
  if (rows == 0) return;
  if (!subtract_mean) {  // oneDNN 2.6 has no RMSNorm: RmsNormRows, rows split over threads
    const int threads = rows * cols >= kParallelElements ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), team = omp_get_num_threads();
      RmsNormRows(x, gamma, beta, y, mean, rstd, rows * t / team, rows * (t + 1) / team, cols, eps);
    }
    return;
  }
  if (cols % 16 == 0 && rows * cols < kParallelElements) {  // one thread's rows on AVX-512 or AVX2
    static const bool avx2 = CpuHasAvx2Fma();
    if (avx512_core_) return onednn::LayerNormRowsAvx512(x, gamma, beta, y, mean, rstd, rows, cols, eps);
    if (avx2) return onednn::LayerNormRowsAvx2(x, gamma, beta, y, mean, rstd, rows, cols, eps);
  }
  SingleThreaded small(rows * cols < kParallelElements);
  NormKey key{rows, cols, eps, gamma != nullptr, beta != nullptr};
  auto it = norms_.find(key);
  if (it == norms_.end()) {
    memory::desc data_md({rows, cols}, dt::f32, tag::ab);
    memory::desc stat_md({rows}, dt::f32, tag::a);
    memory::desc param_md({cols}, dt::f32, tag::a);
    auto flags = dnnl::normalization_flags::none;
    if (gamma) flags |= dnnl::normalization_flags::use_scale;
    if (beta) flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_training, data_md,
                                                 stat_md, eps, flags);
    CachedNorm cached{dnnl::layer_normalization_forward({desc, engine_}),
                      {{DNNL_ARG_SRC, memory(data_md, engine_, nullptr)},
                       {DNNL_ARG_DST, memory(data_md, engine_, nullptr)},
                       {DNNL_ARG_MEAN, memory(stat_md, engine_, nullptr)},
                       {DNNL_ARG_VARIANCE, memory(stat_md, engine_, nullptr)}},
                      std::vector<float>(rows)};
    if (gamma) cached.args.emplace(DNNL_ARG_SCALE, memory(param_md, engine_, nullptr));
    if (beta) cached.args.emplace(DNNL_ARG_SHIFT, memory(param_md, engine_, nullptr));
    it = norms_.emplace(key, std::move(cached)).first;
  }
  CachedNorm& norm = it->second;
  std::vector<float>& variance = norm.variance;
  norm.args.at(DNNL_ARG_SRC).set_data_handle(const_cast<float*>(x));
  norm.args.at(DNNL_ARG_DST).set_data_handle(y);
  norm.args.at(DNNL_ARG_MEAN).set_data_handle(mean);
  norm.args.at(DNNL_ARG_VARIANCE).set_data_handle(variance.data());
  if (gamma) norm.args.at(DNNL_ARG_SCALE).set_data_handle(const_cast<float*>(gamma));
  if (beta) norm.args.at(DNNL_ARG_SHIFT).set_data_handle(const_cast<float*>(beta));
  norm.primitive.execute(stream_, norm.args);
  stream_.wait();
  for (int64_t r = 0; r < rows; ++r) rstd[r] = 1.0f / std::sqrt(variance[r] + eps);
}

namespace {

// A rank-4 permute that keeps the last dimension: y's rows (i0, i1, i2) of
// `row` floats from x at i0 * s0 + i1 * s1 + i2 * s2.
struct PermuteRows4 {
  const float* x;
  float* y;
  int64_t s0, s1, s2, n1, n2, row;
};

// The rows of PermuteRows4 under i0; kRow > 0 is `row` known at compile time
// (a fixed-size copy, no loop), 0 any row.
template <int kRow>
void CopyRows4(const PermuteRows4& p, int64_t i0) {
  for (int64_t i1 = 0; i1 < p.n1; ++i1) {
    const float* from = p.x + i0 * p.s0 + i1 * p.s1;
    float* to = p.y + (i0 * p.n1 + i1) * p.n2 * p.row;
    for (int64_t i2 = 0; i2 < p.n2; ++i2, from += p.s2, to += p.row) {
      if (kRow > 0) {
        __builtin_memcpy(to, from, kRow * sizeof(float));
      } else {
        for (int64_t j = 0; j < p.row; ++j) to[j] = from[j];
      }
    }
  }
}

// ScatterAdd's loop, cloned for AVX-512 and AVX2: the reference's
// (reference_indexing.cc), a row's columns a vector at a time, the rows in
// order i = 0..n-1, each element one float addition, so the same bits. (The
// reference's baseline x86-64 loop took 7.5-10.3 us a step on the sort
// model's 512 x 64 embedding gradient on an Intel Xeon, this one 2.4-2.8.)
TVLAB_CLONED_LOOP void ScatterAddRowsLoop(const float* d_out, int64_t cols, const int32_t* ids, int64_t n,
                                          float* d_table) {
  for (int64_t i = 0; i < n; ++i) {
    const float* from = d_out + i * cols;
    float* to = d_table + int64_t{ids[i]} * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) to[c] += from[c];
  }
}

void ScatterAddRows(const float* d_out, int64_t cols, const int32_t* ids, int64_t n, float* d_table) {
  RunIsaClone<ScatterAddRowsLoop>(d_out, cols, ids, n, d_table);
}

}  // namespace

void OnednnBackend::Permute(const float* x, const Shape& shape, const std::vector<int>& perm,
                            float* y) {
  const int rank = static_cast<int>(shape.size());
  if (rank == 0 || perm[rank - 1] != rank - 1) {
    return ReferenceBackend::Permute(x, shape, perm, y);
  }
  // The last dimension stays last: copy contiguous rows of it.
  const int64_t row = shape[rank - 1];
  Shape in_strides = ContiguousStrides(shape);
  Shape out_shape(rank - 1);
  for (int i = 0; i < rank - 1; ++i) out_shape[i] = shape[perm[i]];
  const int64_t rows = NumElements(out_shape);
  if (rows == 0) return;  // an empty dimension (and nothing to divide by below)
  if (rank == 4) {  // attention's head split and merge, (B, T, H, hs) <-> (B, H, T, hs): three loops
    const PermuteRows4 rows4{x, y, in_strides[perm[0]], in_strides[perm[1]], in_strides[perm[2]],
                             out_shape[1], out_shape[2], row};
    const int64_t n0 = out_shape[0];
#pragma omp parallel for if (rows * row >= kParallelElements) schedule(static)
    for (int64_t i0 = 0; i0 < n0; ++i0) {
      switch (row) {  // head sizes: the row copy unrolled at compile time
        case 16: CopyRows4<16>(rows4, i0); break;
        case 32: CopyRows4<32>(rows4, i0); break;
        case 64: CopyRows4<64>(rows4, i0); break;
        default: CopyRows4<0>(rows4, i0); break;
      }
    }
    return;
  }
  const int outer = rank - 1;
  // Each thread's rows [first, last): the first row's index from its
  // number, then an odometer over out_shape (no division per row).
#pragma omp parallel if (rows * row >= kParallelElements)
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = rows * t / threads, last = rows * (t + 1) / threads;
    std::vector<int64_t> index(outer);
    int64_t src = 0, rest = first;
    for (int d = outer - 1; d >= 0; --d) {
      index[d] = rest % out_shape[d];
      rest /= out_shape[d];
      src += index[d] * in_strides[perm[d]];
    }
    for (int64_t r = first; r < last; ++r) {
      // A plain loop, not std::copy: rows are often 16-64 floats (a head),
      // where memmove's call costs as much as the copy.
      const float* from = x + src;
      float* to = y + r * row;
      for (int64_t j = 0; j < row; ++j) to[j] = from[j];
      for (int d = outer - 1; d >= 0; --d) {  // next row: carry like an odometer
        src += in_strides[perm[d]];
        if (++index[d] < out_shape[d]) break;
        src -= index[d] * in_strides[perm[d]];
        index[d] = 0;
      }
    }
  }
}

// One thread, rows in order: two ids may name the same row of d_table.
void OnednnBackend::ScatterAdd(const float* d_out, int64_t cols, const int32_t* ids, int64_t n, float* d_table) {
  ScatterAddRows(d_out, cols, ids, n, d_table);
}

}  // namespace tvlab
