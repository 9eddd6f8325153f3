// cpu_onednn's NormalizeBackward (LayerNorm, and RMSNorm without
// subtract_mean): each row's two sums in double in a fixed lane order, then
// its elementwise passes; rows split over OpenMP threads above
// kParallelElements, dgamma and dbeta summed per thread and added in thread
// order. NormalizeBackwardAdd is the same rows adding an addend into each
// dx element as it is written (addend + dx, Binary's one addition).

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/double_lanes.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/check.h"
#include "framework/core/cpu_features.h"

namespace tvlab {
namespace {

using onednn::kParallelElements;

using onednn::DoubleLanes;
using onednn::DoubleLanesF8;

// NormalizeRowsAvx512's rows a group (TreeSumsOfEight's eight), and the
// most elements of x a thread's rows may hold for it.
constexpr int kGroupRows = 8;
constexpr int64_t kGroupRowsMaxElements = int64_t{1} << 18;

// The end of a row's sums in their fixed order (RowSums): the eight lanes
// of each added ((0+1)+(2+3))+((4+5)+(6+7)), then columns [from, cols) in
// order.
inline __attribute__((always_inline)) void FinishRowSums(const double (&lanes_g)[8], const double (&lanes_gx)[8],
                                                         const float* x, const float* dy, const float* gamma, float mu,
                                                         float rs, int64_t from, int64_t cols, double* sum_g,
                                                         double* sum_gx) {
  const double* a = lanes_g;
  const double* b = lanes_gx;
  double g_total = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  double gx_total = ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
  for (int64_t c = from; c < cols; ++c) {
    const float g = dy[c] * (gamma ? gamma[c] : 1.0f);
    g_total += g;
    gx_total += static_cast<double>(g) * ((x[c] - mu) * rs);
  }
  *sum_g = g_total;
  *sum_gx = gx_total;
}

// Row sums of NormalizeBackward (g = dy * gamma, xhat = (x - mean) * rstd):
// *sum_g = sum of g and *sum_gx = sum of g * xhat, in double, in a fixed
// order: eight lanes (lane l takes the columns l, l + 8, ... below cols
// rounded down to 8, in order), the lanes added ((0+1)+(2+3))+((4+5)+(6+7)),
// then the remaining columns in order (DoubleLanes). Every build of
// NormalizeRows computes the same lane operations, so every machine the
// same bits.
template <bool kOneVector>
TVLAB_CLONED_LOOP void RowSums(const float* x, const float* dy, const float* gamma, float mu, float rs, int64_t cols,
                               double* sum_g, double* sum_gx) {
  const DoubleLanesF8 mu8 = DoubleLanesF8{} + mu, rs8 = DoubleLanesF8{} + rs;
  DoubleLanes<kOneVector> acc_g, acc_gx;
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    DoubleLanesF8 x8, dy8, gamma8 = DoubleLanesF8{} + 1.0f;
    __builtin_memcpy(&x8, x + c, sizeof x8);
    __builtin_memcpy(&dy8, dy + c, sizeof dy8);
    if (gamma) __builtin_memcpy(&gamma8, gamma + c, sizeof gamma8);
    const DoubleLanesF8 g = dy8 * gamma8;
    acc_g.Add(g);
    acc_gx.AddProduct(g, (x8 - mu8) * rs8);  // exact: 24 x 24 bits
  }
  double lanes_g[8], lanes_gx[8];
  for (int l = 0; l < 8; ++l) lanes_g[l] = acc_g.Lane(l), lanes_gx[l] = acc_gx.Lane(l);
  FinishRowSums(lanes_g, lanes_gx, x, dy, gamma, mu, rs, c, cols, sum_g, sum_gx);
}

// The elementwise passes of NormalizeBackward's row r once its sums are
// known: dgamma and dbeta added into pg and pb (either may be null), then dx
// (addr + dx when the addend's row addr is given: -ffp-contract=off keeps
// that addition a separate rounding, as Binary's).
// The same float operations in every clone and at any vector width.
inline __attribute__((always_inline)) void RowPasses(const float* xr, const float* gamma, float mu, float rs,
                                                     const float* dyr, const float* addr, float* dxr, float* pg,
                                                     float* pb, int64_t cols, bool subtract_mean, double sum_g,
                                                     double sum_gx) {
  if (pg) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) pg[c] += dyr[c] * ((xr[c] - mu) * rs);
  }
  if (pb) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) pb[c] += dyr[c];
  }
  const float mg = subtract_mean ? static_cast<float>(sum_g / cols) : 0.0f;
  const float mgx = static_cast<float>(sum_gx / cols);
  if (addr != nullptr) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float xhat = (xr[c] - mu) * rs;
      const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      dxr[c] = addr[c] + rs * (g - mg - xhat * mgx);
    }
    return;
  }
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) {
    const float xhat = (xr[c] - mu) * rs;
    const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
    dxr[c] = rs * (g - mg - xhat * mgx);
  }
}

// NormalizeBackward's rows [first, last): dx (plus addend's rows, when not
// null), and dgamma and dbeta added into this thread's partial rows pg and
// pb (either may be null). Built for AVX-512 and AVX2 (isa_clones.h); the
// elementwise passes round the same at any width.
template <bool kOneVector>
TVLAB_CLONED_LOOP void NormalizeRowsLoop(const float* x, const float* gamma, const float* mean, const float* rstd,
                                         const float* dy, const float* addend, float* dx, float* pg, float* pb,
                                         int64_t first, int64_t last, int64_t cols, bool subtract_mean) {
  for (int64_t r = first; r < last; ++r) {
    double sum_g, sum_gx;
    RowSums<kOneVector>(x + r * cols, dy + r * cols, gamma, mean[r], rstd[r], cols, &sum_g, &sum_gx);
    RowPasses(x + r * cols, gamma, mean[r], rstd[r], dy + r * cols, addend ? addend + r * cols : nullptr, dx + r * cols,
              pg, pb, cols, subtract_mean, sum_g, sum_gx);
  }
}

void NormalizeRows(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                   const float* addend, float* dx, float* pg, float* pb, int64_t first, int64_t last, int64_t cols,
                   bool subtract_mean) {
  RunIsaCloneByWidth<NormalizeRowsLoop<true>, NormalizeRowsLoop<false>>(x, gamma, mean, rstd, dy, addend, dx, pg, pb,
                                                                        first, last, cols, subtract_mean);
}

// The AVX-512 rows. (GCC 12's _mm512_cvtps_pd and _mm512_cvtpd_ps start
// from _mm512_undefined_*() and warn that it "may be used uninitialized" in
// some builds: a false positive in the header.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Lane r = ((v[r]_0 + v[r]_1) + (v[r]_2 + v[r]_3)) + ((v[r]_4 + v[r]_5) +
// (v[r]_6 + v[r]_7)) for the eight rows' lane sums v[r]: FinishRowSums' tree
// for all eight rows at once, one vector addition a level, the pairs of
// each level brought side by side by shuffles (14, not a whole transpose's
// 24): the same additions of the same operands, so the same bits.
__attribute__((target("avx512f"))) inline __m512d TreeSumsOfEight(const __m512d* v) {
  // pairs[k], 128-bit lane j: rows 2k and 2k + 1's lanes 2j + (2j + 1).
  __m512d pairs[4];
  for (int k = 0; k < 4; ++k)
    pairs[k] = _mm512_add_pd(_mm512_unpacklo_pd(v[2 * k], v[2 * k + 1]), _mm512_unpackhi_pd(v[2 * k], v[2 * k + 1]));
  // quads[m]: rows 4m, 4m + 1 (128-bit lanes 0, 1) and 4m + 2, 4m + 3 (2,
  // 3), the pairs 0 + 1 (lanes 0, 2) and 2 + 3 (lanes 1, 3) of each.
  __m512d quads[2];
  for (int m = 0; m < 2; ++m)
    quads[m] = _mm512_add_pd(_mm512_shuffle_f64x2(pairs[2 * m], pairs[2 * m + 1], 0x88),
                             _mm512_shuffle_f64x2(pairs[2 * m], pairs[2 * m + 1], 0xDD));
  return _mm512_add_pd(_mm512_shuffle_f64x2(quads[0], quads[1], 0x88), _mm512_shuffle_f64x2(quads[0], quads[1], 0xDD));
}

// RowSums of rows [r, r + kGroupRows) on AVX-512: one vcvtps2pd per eight
// floats (GCC lowers __builtin_convertvector to four instructions there),
// the lanes of all the rows added by TreeSumsOfEight, then the columns
// past cols rounded down to 8 row by row. The same lane operations in the
// same order as RowSums, so the same bits.
__attribute__((target("avx512f"))) void RowSumsOfEight(const float* x, const float* dy, const float* gamma,
                                                       const float* mean, const float* rstd, int64_t r, int64_t cols,
                                                       double* sum_g, double* sum_gx) {
  __m512d acc_g[kGroupRows], acc_gx[kGroupRows];
  const int64_t whole = cols / 8 * 8;
  for (int i = 0; i < kGroupRows; ++i) {
    const float* xr = x + (r + i) * cols;
    const float* dyr = dy + (r + i) * cols;
    const __m256 mu8 = _mm256_set1_ps(mean[r + i]), rs8 = _mm256_set1_ps(rstd[r + i]);
    __m512d g_lanes = _mm512_setzero_pd(), gx_lanes = _mm512_setzero_pd();
    for (int64_t c = 0; c < whole; c += 8) {
      const __m256 gamma8 = gamma ? _mm256_loadu_ps(gamma + c) : _mm256_set1_ps(1.0f);
      const __m512d g = _mm512_cvtps_pd(_mm256_mul_ps(_mm256_loadu_ps(dyr + c), gamma8));
      const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + c), mu8), rs8);
      g_lanes = _mm512_add_pd(g_lanes, g);
      gx_lanes = _mm512_add_pd(gx_lanes, _mm512_mul_pd(g, _mm512_cvtps_pd(xhat)));
    }
    acc_g[i] = g_lanes;
    acc_gx[i] = gx_lanes;
  }
  _mm512_storeu_pd(sum_g, TreeSumsOfEight(acc_g));
  _mm512_storeu_pd(sum_gx, TreeSumsOfEight(acc_gx));
  for (int i = 0; i < kGroupRows && whole < cols; ++i) {
    const float *xr = x + (r + i) * cols, *dyr = dy + (r + i) * cols;
    for (int64_t c = whole; c < cols; ++c) {
      const float g = dyr[c] * (gamma ? gamma[c] : 1.0f);
      sum_g[i] += g;
      sum_gx[i] += static_cast<double>(g) * ((xr[c] - mean[r + i]) * rstd[r + i]);
    }
  }
}

// dgamma and dbeta's terms of rows [r, r + kGroupRows) added into pg and pb (either
// may be null) column by column, each column's terms in row order: the
// additions RowPasses makes row by row, without a store and reload of pg
// and pb between rows.
__attribute__((target("avx512f"))) void AddParamTermsOfGroup(const float* x, const float* dy, const float* mean,
                                                             const float* rstd, int64_t r, int64_t cols, float* pg,
                                                             float* pb) {
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    if (pg) {
      __m512 acc = _mm512_loadu_ps(pg + c);
      for (int i = 0; i < kGroupRows; ++i) {
        const __m512 xhat =
            _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + (r + i) * cols + c), _mm512_set1_ps(mean[r + i])),
                          _mm512_set1_ps(rstd[r + i]));
        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(dy + (r + i) * cols + c), xhat));
      }
      _mm512_storeu_ps(pg + c, acc);
    }
    if (pb) {
      __m512 acc = _mm512_loadu_ps(pb + c);
      for (int i = 0; i < kGroupRows; ++i) acc = _mm512_add_ps(acc, _mm512_loadu_ps(dy + (r + i) * cols + c));
      _mm512_storeu_ps(pb + c, acc);
    }
  }
  for (; c < cols; ++c)
    for (int i = 0; i < kGroupRows; ++i) {
      const float dyc = dy[(r + i) * cols + c];
      if (pg) pg[c] += dyc * ((x[(r + i) * cols + c] - mean[r + i]) * rstd[r + i]);
      if (pb) pb[c] += dyc;
    }
}

// The passes of rows [r, r + kGroupRows) once their sums are known, for
// cols a multiple of 16, sixteen columns at a time: dgamma and dbeta's terms
// added into pg and pb (either may be null) in row order, and dx (plus the
// addend's rows where not null), with each row's x and dy loaded once for
// both. The float operations of RowPasses, so the same bits.
__attribute__((target("avx512f"))) void GroupPasses(const float* x, const float* gamma, const float* mean,
                                                    const float* rstd, const float* dy, const float* addend, float* dx,
                                                    float* pg, float* pb, int64_t r, int64_t cols, const float* mg,
                                                    const float* mgx) {
  for (int64_t c = 0; c < cols; c += 16) {
    const __m512 gamma16 = gamma ? _mm512_loadu_ps(gamma + c) : _mm512_set1_ps(1.0f);
    __m512 g_terms = pg ? _mm512_loadu_ps(pg + c) : _mm512_setzero_ps();
    __m512 b_terms = pb ? _mm512_loadu_ps(pb + c) : _mm512_setzero_ps();
    for (int i = 0; i < kGroupRows; ++i) {
      const int64_t at = (r + i) * cols + c;
      const __m512 rs = _mm512_set1_ps(rstd[r + i]);
      const __m512 dyv = _mm512_loadu_ps(dy + at);
      const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + at), _mm512_set1_ps(mean[r + i])), rs);
      g_terms = _mm512_add_ps(g_terms, _mm512_mul_ps(dyv, xhat));
      b_terms = _mm512_add_ps(b_terms, dyv);
      const __m512 g = _mm512_mul_ps(dyv, gamma16);
      __m512 d = _mm512_mul_ps(
          rs, _mm512_sub_ps(_mm512_sub_ps(g, _mm512_set1_ps(mg[i])), _mm512_mul_ps(xhat, _mm512_set1_ps(mgx[i]))));
      if (addend) d = _mm512_add_ps(_mm512_loadu_ps(addend + at), d);
      _mm512_storeu_ps(dx + at, d);
    }
    if (pg) _mm512_storeu_ps(pg + c, g_terms);
    if (pb) _mm512_storeu_ps(pb + c, b_terms);
  }
}

// NormalizeRows on AVX-512 CPUs, kGroupRows rows at a time: their sums
// (RowSumsOfEight), their means of g and g * xhat divided out in one vector,
// then their passes (GroupPasses, or RowPasses row by row where cols is not
// a multiple of 16). The same operations as NormalizeRows, so the same bits.
// Faster where a thread's rows stay in its L2 (kGroupRowsMaxElements),
// slower beyond (four rows a group against one on an Intel Xeon, LayerNorm
// backward: 512 x 64 23.5 -> 18.4 us, 512 x 256 85.5 -> 72.5, 4096 x 64
// 192 -> 173; 512 x 512 185 -> 190, 4096 x 256 683 -> 740). Eight rows a
// group against four on an AMD EPYC Zen 4 (NormalizeBackwardAdd): 512 x 64
// 17.7-18.1 -> 14.2-14.3 us, 512 x 256 62.7-62.8 -> 59.4-60.8, 4096 x 64
// 134-137 -> 105-108.
__attribute__((target("avx512f"))) void NormalizeRowsAvx512(const float* x, const float* gamma, const float* mean,
                                                            const float* rstd, const float* dy, const float* addend,
                                                            float* dx, float* pg, float* pb, int64_t first,
                                                            int64_t last, int64_t cols, bool subtract_mean) {
  const __m512d n = _mm512_set1_pd(static_cast<double>(cols));
  int64_t r = first;
  for (; r + kGroupRows <= last; r += kGroupRows) {
    alignas(64) double sum_g[kGroupRows], sum_gx[kGroupRows];
    RowSumsOfEight(x, dy, gamma, mean, rstd, r, cols, sum_g, sum_gx);
    if (cols % 16 != 0) {
      AddParamTermsOfGroup(x, dy, mean, rstd, r, cols, pg, pb);
      for (int i = 0; i < kGroupRows; ++i)
        RowPasses(x + (r + i) * cols, gamma, mean[r + i], rstd[r + i], dy + (r + i) * cols,
                  addend ? addend + (r + i) * cols : nullptr, dx + (r + i) * cols, nullptr, nullptr, cols,
                  subtract_mean, sum_g[i], sum_gx[i]);
      continue;
    }
    alignas(32) float mg[kGroupRows], mgx[kGroupRows];  // RowPasses' (float)(sum / cols)
    _mm256_store_ps(mg, subtract_mean ? _mm512_cvtpd_ps(_mm512_div_pd(_mm512_load_pd(sum_g), n)) : _mm256_setzero_ps());
    _mm256_store_ps(mgx, _mm512_cvtpd_ps(_mm512_div_pd(_mm512_load_pd(sum_gx), n)));
    GroupPasses(x, gamma, mean, rstd, dy, addend, dx, pg, pb, r, cols, mg, mgx);
  }
  if (r < last) NormalizeRows(x, gamma, mean, rstd, dy, addend, dx, pg, pb, r, last, cols, subtract_mean);
}
#pragma GCC diagnostic pop

// NormalizeBackward (addend null) and NormalizeBackwardAdd.
void NormalizeBackwardOfRows(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                             const float* addend, float* dx, float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                             bool subtract_mean) {
  // The reference's math (LayerNorm, or RMSNorm without subtract_mean):
  //   xhat = (x - mean) * rstd; g = dy * gamma
  //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
  // with rows split over threads; dgamma/dbeta are summed per thread and the
  // partial sums added in thread order.
  const int threads = rows * cols >= kParallelElements ? omp_get_max_threads() : 1;
  // Each thread's dgamma and dbeta rows, in the calling thread's buffers
  // (kept across calls, zeroed here; the team writes through the pointers).
  thread_local onednn::CacheLineVector<float> partial_g_buffer, partial_b_buffer;
  partial_g_buffer.assign(dgamma ? threads * cols : 0, 0.0f);
  partial_b_buffer.assign(dbeta ? threads * cols : 0, 0.0f);
  float* const partial_g = partial_g_buffer.data();
  float* const partial_b = partial_b_buffer.data();
  onednn::OnTeam(threads, [&](int64_t t, int64_t team) {
    // Thread t's rows as `omp for schedule(static)` split them (the first
    // rows % team threads one more), so each partial sums the same rows.
    const int64_t share = rows / team, extra = rows % team;
    const int64_t first = t * share + std::min<int64_t>(t, extra);
    static const bool avx512 = CpuHasAvx512f();
    const auto rows_of = avx512 && rows * cols / team <= kGroupRowsMaxElements ? NormalizeRowsAvx512 : NormalizeRows;
    rows_of(x, gamma, mean, rstd, dy, addend, dx, dgamma ? partial_g + t * cols : nullptr,
            dbeta ? partial_b + t * cols : nullptr, first, first + share + (t < extra), cols, subtract_mean);
  });
  for (int t = 0; t < threads; ++t) {
    for (int64_t c = 0; c < cols; ++c) {
      if (dgamma) dgamma[c] += partial_g[t * cols + c];
      if (dbeta) dbeta[c] += partial_b[t * cols + c];
    }
  }
}

}  // namespace

void OnednnBackend::NormalizeBackward(const float* x, const float* gamma, const float* mean, const float* rstd,
                                      const float* dy, float* dx, float* dgamma, float* dbeta, int64_t rows,
                                      int64_t cols, bool subtract_mean) {
  NormalizeBackwardOfRows(x, gamma, mean, rstd, dy, /*addend=*/nullptr, dx, dgamma, dbeta, rows, cols, subtract_mean);
}

void OnednnBackend::NormalizeBackwardAdd(const float* x, const float* gamma, const float* mean, const float* rstd,
                                         const float* dy, const float* addend, float* dx, float* dgamma, float* dbeta,
                                         int64_t rows, int64_t cols, bool subtract_mean) {
  TVLAB_CHECK(addend != nullptr && addend != dx) << "NormalizeBackwardAdd: a null addend, or dx aliasing it";
  NormalizeBackwardOfRows(x, gamma, mean, rstd, dy, addend, dx, dgamma, dbeta, rows, cols, subtract_mean);
}

}  // namespace tvlab
