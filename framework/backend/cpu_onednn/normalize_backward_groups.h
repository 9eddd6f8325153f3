#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_NORMALIZE_BACKWARD_GROUPS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_NORMALIZE_BACKWARD_GROUPS_H_

// NormalizeBackward's rows eight at a time on AVX-512 and on AVX2
// (onednn_normalize_backward.cc runs the rows one at a time otherwise):
// each row's two sums in double in the fixed lane order of its row loop
// (eight lanes, lane l taking columns l, l + 8, ... below cols rounded down
// to 8; the lanes added ((0+1)+(2+3))+((4+5)+(6+7)); then the columns
// left, in order), dgamma's and dbeta's terms added into pg and pb (either
// may be null) in row order, and
//   dx = rstd * ((g - mean(g)) - xhat * mean(g * xhat))   (g = dy * gamma)
// plus the addend's row where `addend` is not null; the same operations as
// the row loop, so the same bits.

#include <cstdint>

namespace tvlab {
namespace onednn {

// One thread's rows [first, last) in groups of eight: returns the first row
// not done (the rows past the last whole group). Any cols.
int64_t NormalizeBackwardGroupsAvx512(const float* x, const float* gamma, const float* mean, const float* rstd,
                                      const float* dy, const float* addend, float* dx, float* pg, float* pb,
                                      int64_t first, int64_t last, int64_t cols, bool subtract_mean);

// The same on AVX2, where cols is a multiple of 8 (returns `first`
// otherwise, doing nothing).
int64_t NormalizeBackwardGroupsAvx2(const float* x, const float* gamma, const float* mean, const float* rstd,
                                    const float* dy, const float* addend, float* dx, float* pg, float* pb,
                                    int64_t first, int64_t last, int64_t cols, bool subtract_mean);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_NORMALIZE_BACKWARD_GROUPS_H_
