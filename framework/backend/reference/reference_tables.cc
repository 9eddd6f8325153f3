// ReferenceBackend's tables computed from positions: the attention mask's
// additive bias, RoPE's cos/sin, the sinusoidal table and ALiBi's bias.

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
