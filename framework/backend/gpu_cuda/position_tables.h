#ifndef TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_POSITION_TABLES_H_
#define TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_POSITION_TABLES_H_

// Launchers of the tables computed where the tensors live
// (Backend::AttentionMaskBias, RotaryTables, SinusoidalTable, AlibiBias),
// and of RoPE's turn by its table (Backend::Rotary).
// Host-side arguments (key lengths, slopes) travel as kernel arguments in
// chunks, never through a host-to-device copy. Angles are in double, as the
// contract says. They return the CUDA error code of their launches (0 =
// success).

#include <cstdint>

namespace tvlab {

// out (R, 1, T, S): 0 where key j is visible to query i of row r, else -inf.
// key_lengths: R host values, or null with R = 1 (no padding); window > 0
// hides keys W or more positions from the query (AttentionMask's window).
int LaunchAttentionMaskBias(bool causal, int64_t causal_offset, int64_t window,
                            const int64_t* key_lengths, int64_t rows, int64_t t, int64_t s,
                            float* out);
// Then documents (AttentionMask's): sets -inf in out (R, 1, T, S) where key
// j lies outside [begin[r*T + i], end[r*T + i]), the document of query i of
// row r; begin and end are (R, T) device tables.
int LaunchDocumentMask(const int32_t* begin, const int32_t* end, int64_t rows, int64_t t,
                       int64_t s, float* out);
// cos, sin (T, D/2) of (offset + p) * base^(-2i / D).
int LaunchRotaryTables(int64_t offset, int64_t t, int64_t d, double base, float* cos,
                       float* sin);
// y (R, T, H, D) = x turned pair by pair by cos, sin (T, D/2) (Backend::Rotary).
int LaunchRotary(const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t t,
                 int64_t heads, int64_t d, bool interleaved, bool inverse);
// out (T, C): [p, 2i] = sin((offset + p) / base^(2i / C)), [p, 2i + 1] = cos.
int LaunchSinusoidalTable(int64_t offset, int64_t t, int64_t c, double base, float* out);
// out (1, H, T, S): [h, i, j] = -slopes[h] * |q_offset + i - j|; slopes: H host values.
int LaunchAlibiBias(const double* slopes, int64_t heads, int64_t q_offset, int64_t t, int64_t s,
                    float* out);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_GPU_CUDA_POSITION_TABLES_H_
