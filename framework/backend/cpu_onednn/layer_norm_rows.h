#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_LAYER_NORM_ROWS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_LAYER_NORM_ROWS_H_

// LayerNorm's forward rows on AVX-512 and on AVX2 (cpu_onednn's Normalize
// with subtract_mean, one thread's rows of a multiple of 16 columns): the
// same bits from either.

#include <cstdint>

namespace tvlab {
namespace onednn {

// y = (x - mean) * rstd * gamma + beta for rows (cols apart, cols a
// multiple of 16), mean and rstd (rows) written; gamma and beta may be
// null. Per row, in float: 16 lanes of partial sums (lane l takes columns
// l, l + 16, ... in order, from 0), the lanes added as a tree (l + l + 8,
// then + 4, + 2, + 1), divided by cols: the mean; the same over
// fma(x - mean, x - mean, partial): the variance; rstd = 1 / sqrt(variance
// + eps); y = fma((x - mean) * rstd, gamma, beta) (without gamma, times 1;
// without beta, plus 0). layer_norm_avx512.cc.
void LayerNormRowsAvx512(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                         int64_t rows, int64_t cols, float eps);

// The same on AVX2 + FMA, the same bits: each 16-lane vector as two
// halves of eight. layer_norm_avx2.cc.
void LayerNormRowsAvx2(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t cols, float eps);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_LAYER_NORM_ROWS_H_
