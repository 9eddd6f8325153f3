#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_H_

// cpu_onednn's fused attention over at most kShortAttentionKeys keys (the
// sort model's 8 tokens; decoding a short prompt): each query row's keys sit
// in the lanes of one vector, four rows go side by side, and nothing else
// is set up. The tiled kernel (tiled_attention.h) is built for long
// sequences: at the sort model's shape (256 heads of 8 queries x 8 keys,
// head size 16, dropout) its sgemm calls and per-row loops took 526 us a
// forward call and 726 a backward call in the captured step, this kernel
// 109 and 150. The unfused composition's kernels take about 84 and 88
// there, so runtime.attention "auto" keeps the composition below 64 x 64
// pairs (bench/README.md, "Fused attention at 8 keys").
//
// Handles what the tiled kernel handles except ALiBi, bucketed biases and
// soft-caps (those take the tiled kernel: IsShortAttention): every mask,
// sinks, dropout (the same factors, DropoutFactors over the (B, H, T, S)
// order), grouped key/value heads. Same contract (fused_attention.h),
// computed in fp32 whatever d.precision; its clones (AVX-512, AVX2,
// baseline) run the same IEEE operations in the same order (GCC vector
// types, no FMA contraction, sums in a fixed order:
// short_attention_lanes.h). Tested against the reference kernel by the
// fused attention conformance suite's short cases, and against the unfused
// composition by the attention conformance suite (runtime.attention
// "fused" at short sequences).
//
// Threads (OpenMP): tasks of whole batch x key/value heads, forward and
// backward (one thread adds into a key/value head's dk and dv).

#include <cstdint>
#include <vector>

#include "framework/backend/fused_attention.h"

namespace tvlab {

constexpr int64_t kShortAttentionKeys = 16;

// Whether `d` takes this kernel: 1..kShortAttentionKeys keys, no ALiBi, no
// bucketed bias, no soft-cap.
bool IsShortAttention(const FusedAttentionDesc& d);

// What both kernels share: the key/value heads an OpenMP task takes, and
// the dropout factors (count, T, S) of query heads [first, first + count)
// in b * H + h order, as Backend::DropoutMask draws the (B, H, T, S)
// weights, then kShortAttentionKeys zeros (a row's factors load as one
// vector), into `keep` (`words`: DropoutFactors' scratch); null without
// dropout.
int64_t ShortAttentionGroupsPerTask(const FusedAttentionDesc& d);
const float* ShortAttentionKeepFactors(const FusedAttentionDesc& d, int64_t first, int64_t count,
                                       std::vector<float>& keep, std::vector<uint32_t>& words);

// The AVX-512 kernel (short_attention_avx512.h) where the CPU has
// AVX-512F, else the AVX2 heads-in-lanes kernel where it takes `d`
// (short_attention_heads_avx2.h), else the portable kernel of this file.
void ShortAttentionForward(const FusedAttentionDesc& d, const float* q, const float* k,
                           const float* v, float* out, float* lse);
void ShortAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                            const float* v, const float* out, const float* lse,
                            const float* dout, float* dq, float* dk, float* dv);

// The portable kernel on any x86-64 CPU (short_attention_avx512_test
// compares the two kernels with it on AVX-512 machines).
void PortableShortAttentionForward(const FusedAttentionDesc& d, const float* q, const float* k,
                                   const float* v, float* out, float* lse);
void PortableShortAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                                    const float* v, const float* out, const float* lse,
                                    const float* dout, float* dq, float* dk, float* dv);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_H_
