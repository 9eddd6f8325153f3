// ReferenceBackend's tables computed from positions (the attention mask's
// additive bias, RoPE's cos/sin, the sinusoidal table and ALiBi's bias),
// and RoPE's turn by its table.

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "framework/backend/reference/reference_backend.h"

namespace tvlab {

void ReferenceBackend::AttentionMaskBias(const AttentionMask& mask, int64_t t, int64_t s,
                                         float* out) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t rows = !mask.key_lengths.empty()  ? static_cast<int64_t>(mask.key_lengths.size())
                      : mask.has_documents() ? static_cast<int64_t>(mask.document_begin.size()) /
                                                   mask.document_positions
                                             : 1;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)  // causal, padding, window, documents (attention_mask.h)
        out[(r * t + i) * s + j] = mask.Visible(r, i, j, s) ? 0.0f : -inf;  // (R, 1, T, S)
}

void ReferenceBackend::RotaryTables(int64_t offset, int64_t t, int64_t d, double base,
                                    float* cos, float* sin) {
  const int64_t half = d / 2;
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(offset + p) *
                           std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
}

namespace {
// One pair turned by cos c and sin s (-sin for the inverse turn, exact:
// a c - b (-s) = a c + b s and a (-s) + b c = b c - a s bit for bit).
inline void Turn(float a, float b, float c, float s, float* ya, float* yb) {
  const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
  *ya = ac - bs;
  *yb = as + bc;
}
}  // namespace

void ReferenceBackend::Rotary(const float* x, const float* cos, const float* sin, float* y, int64_t rows,
                              int64_t t, int64_t heads, int64_t d, bool interleaved, bool inverse) {
  const int64_t half = d / 2;
  const float sign = inverse ? -1.0f : 1.0f;
  for (int64_t row = 0; row < rows * t * heads; ++row) {
    const int64_t p = row / heads % t;  // the row's position
    const float* c = cos + p * half;    // (D/2)
    const float* s = sin + p * half;
    const float* xr = x + row * d;
    float* yr = y + row * d;
    if (interleaved) {  // pairs (2i, 2i + 1)
      for (int64_t i = 0; i < half; ++i)
        Turn(xr[2 * i], xr[2 * i + 1], c[i], sign * s[i], &yr[2 * i], &yr[2 * i + 1]);
    } else {  // pairs (i, i + D/2)
      for (int64_t i = 0; i < half; ++i) Turn(xr[i], xr[i + half], c[i], sign * s[i], &yr[i], &yr[i + half]);
    }
  }
}

void ReferenceBackend::SinusoidalTable(int64_t offset, int64_t t, int64_t c, double base,
                                       float* out) {
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < c; i += 2) {
      const double angle =
          static_cast<double>(offset + p) / std::pow(base, static_cast<double>(i) / c);
      out[p * c + i] = static_cast<float>(std::sin(angle));
      out[p * c + i + 1] = static_cast<float>(std::cos(angle));
    }
}

void ReferenceBackend::AlibiBias(const std::vector<double>& slopes, int64_t q_offset, int64_t t,
                                 int64_t s, float* out) {
  const int64_t heads = static_cast<int64_t>(slopes.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)
        out[(h * t + i) * s + j] = static_cast<float>(-slopes[h] * std::llabs(q_offset + i - j));
}

}  // namespace tvlab
