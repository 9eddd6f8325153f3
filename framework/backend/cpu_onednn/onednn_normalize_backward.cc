// cpu_onednn's NormalizeBackward (LayerNorm, and RMSNorm without
// subtract_mean): each row's two sums in double in a fixed lane order, then
// its elementwise passes; rows split over OpenMP threads above
// kParallelElements, dgamma and dbeta summed per thread and added in thread
// order. NormalizeBackwardAdd is the same rows adding an addend into each
// dx element as it is written (addend + dx, Binary's one addition).

#include <omp.h>

#include <algorithm>
#include <vector>

#include "framework/backend/cpu_onednn/cache_line_vector.h"
#include "framework/backend/cpu_onednn/double_lanes.h"
#include "framework/backend/cpu_onednn/normalize_backward_groups.h"
#include "framework/backend/cpu_onednn/onednn_backend.h"
#include "framework/backend/cpu_onednn/parallel.h"
#include "framework/core/check.h"
#include "framework/core/cpu_features.h"

namespace tvlab {
namespace {

using onednn::kParallelElements;

using onednn::DoubleLanes;
using onednn::DoubleLanesF8;

// The most elements of x a thread's rows may hold for them to go eight at
// a time (normalize_backward_groups.h): faster where they stay in its L2,
// slower beyond (four rows a group against one on an Intel Xeon, LayerNorm
// backward: 512 x 64 23.5 -> 18.4 us, 512 x 256 85.5 -> 72.5, 4096 x 64
// 192 -> 173; 512 x 512 185 -> 190, 4096 x 256 683 -> 740). Eight rows a
// group against four on an AMD EPYC Zen 4 (NormalizeBackwardAdd): 512 x 64
// 17.7-18.1 -> 14.2-14.3 us, 512 x 256 62.7-62.8 -> 59.4-60.8, 4096 x 64
// 134-137 -> 105-108.
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
    const int64_t end = first + share + (t < extra);
    float* pg = dgamma ? partial_g + t * cols : nullptr;
    float* pb = dbeta ? partial_b + t * cols : nullptr;
    // Eight rows at a time where the thread's rows stay in its L2, the rest
    // (and every row past it) one at a time: the same bits either way.
    static const bool avx512 = CpuHasAvx512f(), avx2 = CpuHasAvx2();
    const bool in_l2 = rows * cols / team <= kGroupRowsMaxElements;
    int64_t r = first;
    if (in_l2 && avx512) {
      r = onednn::NormalizeBackwardGroupsAvx512(x, gamma, mean, rstd, dy, addend, dx, pg, pb, first, end, cols,
                                                subtract_mean);
    } else if (in_l2 && avx2) {
      r = onednn::NormalizeBackwardGroupsAvx2(x, gamma, mean, rstd, dy, addend, dx, pg, pb, first, end, cols,
                                              subtract_mean);
    }
    if (r < end) NormalizeRows(x, gamma, mean, rstd, dy, addend, dx, pg, pb, r, end, cols, subtract_mean);
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
