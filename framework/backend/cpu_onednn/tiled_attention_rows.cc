// The fused attention kernel's row loops (tiled_attention_rows.h).

#include "framework/backend/cpu_onednn/tiled_attention_rows.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "framework/core/isa_clones.h"

namespace tvlab {
namespace tiled_rows {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp(x) to ~2 ulp (Cephes' expf polynomial) written so that the compiler
// vectorises the loops that call it; x <= -87 gives exactly 0 (so -inf, a
// hidden key, contributes nothing). The row loops below are compiled for
// AVX-512, AVX2 and baseline x86-64 (isa_clones.h: picked under the
// instruction-set cap).
// Their clamps and selects vectorise because the library builds with
// -fno-trapping-math (BUILD.bazel); without it GCC left the AVX2 clone of
// ExpShiftedSum scalar, 11.5% of the GPT bench's step (bench/README.md).

// Row sums run in kSumLanes partial sums (element j into lane j % 16, each
// lane in order of j), then the leftover elements in order, then the lanes
// in order: one AVX-512 vector, two AVX2 or four SSE vectors compute the
// same sums, so every clone gives the same bits.
constexpr int kSumLanes = 16;

float AddLanes(const float* lanes, float tail) {
  for (int l = 0; l < kSumLanes; ++l) tail += lanes[l];
  return tail;
}

inline float ExpApprox(float x) {
  const float clamped = std::min(std::max(x, -87.0f), 88.0f);
  float n;
  const float p = ExpMantissa(clamped, &n);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return x < -87.0f ? 0.0f : p * scale;
}

}  // namespace

TVLAB_CLONED_LOOP float ExpShiftedSumLoop(float* row, int64_t n, float shift) {
  float lanes[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) {
      const float e = ExpApprox(row[j + l] - shift);
      row[j + l] = e;
      lanes[l] += e;
    }
  }
  // The leftover elements' exponentials as one padded block (a vector loop;
  // the padding's -inf gives 0, not used), then their sum in order.
  float tail = 0.0f;
  if (j < n) {
    const int64_t rest = n - j;
    float block[kSumLanes];
    for (int l = 0; l < kSumLanes; ++l) block[l] = l < rest ? row[j + l] - shift : kNegInf;
    for (int l = 0; l < kSumLanes; ++l) block[l] = ExpApprox(block[l]);
    for (int64_t l = 0; l < rest; ++l) {
      row[j + l] = block[l];
      tail += block[l];
    }
  }
  return AddLanes(lanes, tail);
}

float ExpShiftedSum(float* row, int64_t n, float shift) { return RunIsaClone<ExpShiftedSumLoop>(row, n, shift); }

// Eight floats: one AVX2 vector, two SSE ones, half an AVX-512 one.
typedef float F8 __attribute__((vector_size(32)));

TVLAB_CLONED_LOOP float RowMaxLoop(const float* row, int64_t n) {
  // 16 running maxima in two vectors of eight (lane l in half l / 8): GCC
  // did not vectorise the same selects written over an array (16 scalar
  // maxima an element group), and kept one vector of sixteen on the stack
  // in its AVX2 build.
  F8 lanes[2] = {F8{} + kNegInf, F8{} + kNegInf};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int h = 0; h < 2; ++h) {
      F8 x;
      std::memcpy(&x, row + j + 8 * h, sizeof x);
      lanes[h] = x > lanes[h] ? x : lanes[h];
    }
  float m = kNegInf;
  for (; j < n; ++j) m = std::max(m, row[j]);
  for (int l = 0; l < 16; ++l) m = std::max(m, lanes[l / 8][l % 8]);
  return m;
}

float RowMax(const float* row, int64_t n) { return RunIsaClone<RowMaxLoop>(row, n); }

TVLAB_CLONED_LOOP void SubtractDistanceBiasLoop(float* row, int64_t n, float slope, int64_t offset) {
  for (int64_t j = 0; j < n; ++j)
    row[j] -= slope * static_cast<float>(offset > j ? offset - j : j - offset);
}

void SubtractDistanceBias(float* row, int64_t n, float slope, int64_t offset) {
  RunIsaClone<SubtractDistanceBiasLoop>(row, n, slope, offset);
}

TVLAB_CLONED_LOOP void ScaleRowLoop(float* row, int64_t n, float s) {
  for (int64_t j = 0; j < n; ++j) row[j] *= s;
}

void ScaleRow(float* row, int64_t n, float s) { RunIsaClone<ScaleRowLoop>(row, n, s); }

TVLAB_CLONED_LOOP void MultiplyRowsLoop(float* a, const float* b, int64_t n) {
  for (int64_t j = 0; j < n; ++j) a[j] *= b[j];
}

void MultiplyRows(float* a, const float* b, int64_t n) { RunIsaClone<MultiplyRowsLoop>(a, b, n); }

TVLAB_CLONED_LOOP float DotRowLoop(const float* a, const float* b, int64_t n) {
  float lanes[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) lanes[l] += a[j + l] * b[j + l];
  }
  float tail = 0.0f;
  for (; j < n; ++j) tail += a[j] * b[j];
  return AddLanes(lanes, tail);
}

float DotRow(const float* a, const float* b, int64_t n) { return RunIsaClone<DotRowLoop>(a, b, n); }

TVLAB_CLONED_LOOP void LogitGradientLoop(const float* p, const float* keep, float* dp, int64_t n, float big_d,
                                         float scale) {
  if (keep == nullptr) {
    for (int64_t j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - big_d) * scale;
  } else {
    for (int64_t j = 0; j < n; ++j) dp[j] = p[j] * (keep[j] * dp[j] - big_d) * scale;
  }
}

void LogitGradient(const float* p, const float* keep, float* dp, int64_t n, float big_d, float scale) {
  RunIsaClone<LogitGradientLoop>(p, keep, dp, n, big_d, scale);
}

}  // namespace tiled_rows
}  // namespace tvlab
