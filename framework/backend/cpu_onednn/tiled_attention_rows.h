#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_ROWS_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_ROWS_H_

// The row loops of the tiled fused attention kernel (tiled_attention.cc):
// the softmax's max, exponentials and sums, rescaling, dropout factors and
// the backward's row dots and logit gradients. Each is compiled for
// AVX-512, AVX2 and baseline x86-64 (isa_clones.h: picked under the cap),
// and the clones give the same bits: sums run in 16 partial sums in a fixed
// order, and no clone contracts multiplies and adds into FMAs.

#include <cstdint>

namespace tvlab {
namespace tiled_rows {

// exp(clamped) / 2^n, where n (returned in *n) is clamped / ln 2 rounded
// to the nearest integer: Cephes' expf polynomial, the arithmetic the
// scalar exp of the row loops (tiled_attention_rows.cc) and the vector one
// of the short kernel (short_attention_lanes.h) share. T is float or a GCC
// vector of floats; clamped is within [-87, 88]. Always inlined, so each
// target clone that calls it gets its own vector code.
template <typename T>
inline __attribute__((always_inline)) T ExpMantissa(T clamped, T* n) {
  const T t = clamped * 1.44269504088896341f;
  *n = (t + 12582912.0f) - 12582912.0f;  // round to nearest
  const T r = clamped - *n * 0.693359375f + *n * 2.12194440e-4f;
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// row[j] = exp(row[j] - shift) for j < n (a polynomial exp to ~2 ulp;
// exactly 0 from -87 down, so a hidden key's -inf contributes nothing);
// returns their sum.
float ExpShiftedSum(float* row, int64_t n, float shift);

// The largest of row[0, n) (-inf for n 0).
float RowMax(const float* row, int64_t n);

// row[j] -= slope * |offset - j| for j < n (ALiBi; offset = query position
// minus the first key's position).
void SubtractDistanceBias(float* row, int64_t n, float slope, int64_t offset);

// row[j] *= s for j < n.
void ScaleRow(float* row, int64_t n, float s);

// a[j] *= b[j] for j < n.
void MultiplyRows(float* a, const float* b, int64_t n);

// The sum of a[j] * b[j] over j < n.
float DotRow(const float* a, const float* b, int64_t n);

// ds[j] = p[j] * (keep[j] * dp[j] - big_d) * scale (keep null: 1), in dp.
void LogitGradient(const float* p, const float* keep, float* dp, int64_t n, float big_d,
                   float scale);

}  // namespace tiled_rows
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_ROWS_H_
