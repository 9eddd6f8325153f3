#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_LANES_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_LANES_H_

// The vector steps of the short fused attention kernel
// (short_attention.cc): a row of up to kShortAttentionKeys keys in the lanes
// of one GCC vector, and the products, sums and exponentials over them.
// Only short_attention.cc includes it.

#include <algorithm>
#include <cstdint>
#include <limits>

#include "framework/backend/cpu_onednn/short_attention.h"
#include "framework/backend/cpu_onednn/tiled_attention_rows.h"

// GCC warns (-Wpsabi) that passing 64-byte vectors by value has another
// ABI without AVX-512; every function here is inlined into its caller.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tvlab {
namespace short_lanes {

#define TVLAB_SHORT_INLINE inline __attribute__((always_inline))

constexpr int kLanes = kShortAttentionKeys;  // key j of a query row in lane j

// kLanes floats as one GCC vector: one AVX-512 register in that clone, two
// AVX2 or four SSE registers in the others, the same operations in each
// (every lane is IEEE float; -ffp-contract=off keeps multiplies and adds
// apart). The helpers taking and returning them are always inlined into a
// clone, so the ABI GCC warns about (-Wpsabi) is never used.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t IntLanes __attribute__((vector_size(kLanes * sizeof(int32_t))));

TVLAB_SHORT_INLINE Lanes Load(const float* p) {
  Lanes v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
TVLAB_SHORT_INLINE void Store(float* p, Lanes v) { __builtin_memcpy(p, &v, sizeof(v)); }
TVLAB_SHORT_INLINE Lanes Splat(float x) { return Lanes{} + x; }
TVLAB_SHORT_INLINE Lanes Max(Lanes a, Lanes b) { return a > b ? a : b; }
TVLAB_SHORT_INLINE Lanes Min(Lanes a, Lanes b) { return a < b ? a : b; }

// The sum of the lanes in a fixed pairwise order: lane l + lane l + 8, then
// + 4, + 2, + 1 (the same bits in every clone).
TVLAB_SHORT_INLINE float SumLanes(Lanes x) {
  x += __builtin_shuffle(x, IntLanes{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
  x += __builtin_shuffle(x, IntLanes{4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3});
  x += __builtin_shuffle(x, IntLanes{2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1});
  return x[0] + x[1];
}

TVLAB_SHORT_INLINE float MaxLane(Lanes x) {
  x = Max(x, __builtin_shuffle(x, IntLanes{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}));
  x = Max(x, __builtin_shuffle(x, IntLanes{4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3}));
  x = Max(x, __builtin_shuffle(x, IntLanes{2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
  return std::max(x[0], x[1]);
}

// ExpApprox (tiled_attention_rows.cc: a polynomial exp to ~2 ulp, exactly 0
// from -87 down) of every lane, with the same operations.
TVLAB_SHORT_INLINE Lanes ExpLanes(Lanes x) {
  const Lanes clamped = Max(x, Splat(-87.0f)) < 88.0f ? Max(x, Splat(-87.0f)) : Splat(88.0f);
  Lanes n;
  const Lanes p = tiled_rows::ExpMantissa(clamped, &n);
  const IntLanes bits = (__builtin_convertvector(n, IntLanes) + 127) << 23;
  Lanes scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  return x < -87.0f ? Splat(0.0f) : p * scale;
}

// The sum of a[c] * b[c] over c < n: kLanes partial sums, then the rest.
TVLAB_SHORT_INLINE float Dot(const float* a, const float* b, int64_t n) {
  Lanes lanes{};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) lanes += Load(a + c) * Load(b + c);
  float tail = 0.0f;
  for (; c < n; ++c) tail += a[c] * b[c];
  return SumLanes(lanes) + tail;
}

// out[r][c] = (sum over j in [first, end) of w[r][j] * rows[j][c]) * scale[r]
// for R rows of out (leading dimension n, rows (S, n)), c < n: the sums in
// registers, j in order.
template <int R>
TVLAB_SHORT_INLINE void WeightedRows(const float (*w)[kLanes], const float* rows, int64_t first,
                                     int64_t end, int64_t n, const float* scale, float* out) {
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    Lanes acc[R] = {};
    for (int64_t j = first; j < end; ++j) {
      const Lanes row = Load(rows + j * n + c);
      for (int r = 0; r < R; ++r) acc[r] += w[r][j] * row;
    }
    for (int r = 0; r < R; ++r) Store(out + r * n + c, acc[r] * scale[r]);
  }
  for (; c < n; ++c)
    for (int r = 0; r < R; ++r) {
      float acc = 0.0f;
      for (int64_t j = first; j < end; ++j) acc += w[r][j] * rows[j * n + c];
      out[r * n + c] = acc * scale[r];
    }
}

// rows[j][c] += w[0][j] * x[0][c], then + w[1][j] * x[1][c], ... for j in
// [first, end), c < n (rows (S, n), x (R, n)).
template <int R>
TVLAB_SHORT_INLINE void AddOuterProducts(const float (*w)[kLanes], const float* x, int64_t first,
                                         int64_t end, int64_t n, float* rows) {
  for (int64_t j = first; j < end; ++j) {
    float* row = rows + j * n;
    int64_t c = 0;
    for (; c + kLanes <= n; c += kLanes) {
      Lanes acc = Load(row + c);
      for (int r = 0; r < R; ++r) acc += w[r][j] * Load(x + r * n + c);
      Store(row + c, acc);
    }
    for (; c < n; ++c)
      for (int r = 0; r < R; ++r) row[c] += w[r][j] * x[r * n + c];
  }
}

// s[r] lane j = scale * (row r of x (R, width) . column j of xt (width, kLanes)).
template <int R>
TVLAB_SHORT_INLINE void RowProducts(const float* x, int64_t width, const float* xt, float scale,
                                    Lanes* s) {
  Lanes acc[R] = {};
  for (int64_t e = 0; e < width; ++e) {
    const Lanes column = Load(xt + e * kLanes);
    for (int r = 0; r < R; ++r) acc[r] += x[r * width + e] * column;
  }
  for (int r = 0; r < R; ++r) s[r] = acc[r] * scale;
}

// Visible keys [first, end) of one query, within [0, S).
struct Span {
  int64_t first, end;
};

// -inf, +inf, -inf, kLanes each: read from 16 - first, lane j is -inf below
// first; read from 32 - end, -inf from end on.
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNegInf = -kInf;
#define TVLAB_EIGHT(x) x, x, x, x, x, x, x, x
alignas(64) constexpr float kBounds[3 * kLanes] = {
    TVLAB_EIGHT(-kInf), TVLAB_EIGHT(-kInf), TVLAB_EIGHT(kInf),
    TVLAB_EIGHT(kInf),  TVLAB_EIGHT(-kInf), TVLAB_EIGHT(-kInf)};
#undef TVLAB_EIGHT

// x where lane j is in [first, end), else -inf: two minimums (a select of
// vectors compiled to a branch per lane in GCC's AVX-512F clone).
TVLAB_SHORT_INLINE Lanes HideOutside(Lanes x, Span keys) {
  return Min(Min(x, Load(kBounds + kLanes - keys.first)), Load(kBounds + 2 * kLanes - keys.end));
}

}  // namespace short_lanes
}  // namespace tvlab

#pragma GCC diagnostic pop

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_LANES_H_
