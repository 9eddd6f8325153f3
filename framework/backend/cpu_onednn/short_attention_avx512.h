#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_AVX512_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_AVX512_H_

// The short fused attention kernel (short_attention.h) on CPUs with
// AVX-512F: the same contract and the same cases (at most 16 keys; masks,
// sinks, dropout, grouped key/value heads), written with AVX-512 intrinsics
// and fused multiply-adds, eight query rows at a time.
//
// Why a second kernel: the portable one (short_attention.cc) keeps every
// clone's operations the same (no FMA, GCC vector types, one row a vector,
// row-by-row helpers), and at the sort model's shape (256 heads of 8 x 8,
// head size 16, dropout) it took 85-94 us a forward call and 134-149 a
// backward call, more than the unfused composition's 84 and 88. Here each
// step runs for eight rows together (the key/query products, the masks as
// mask registers, an exponential on eight vectors, the weighted sums with
// eight independent chains), and the backward's key and value gradients are
// summed eight keys at a time in registers (bench/README.md, "Short
// attention on AVX-512").
//
// It also takes token-major calls (FusedAttentionDesc::token_major: q, k,
// v and out with every token's heads side by side), reading rows with
// strides, which is why cpu_onednn prefers them on AVX-512 CPUs
// (Backend::PrefersTokenMajorFusedAttention, AttendTokenMajor).
//
// Not the portable kernel's bits (FMA, another exponential and sum order):
// fused attention's contract is the reference's values within rounding, and
// the fused attention conformance suite checks this kernel against the
// reference on every case it runs (cpu_onednn takes this kernel wherever
// the CPU has AVX-512F), and against the portable kernel in
// short_attention_avx512_test.
//
// Calls with 16 query heads or more and the same mask in every batch row
// (the sort model's) go to another layout of the same kernel, sixteen heads
// in the lanes instead of eight rows (short_attention_heads_avx512.h:
// HeadsInLanesTakes); these entry points send them there.

#include <cstdint>

#include "framework/backend/fused_attention.h"

namespace tvlab {
namespace onednn {

// Whether this CPU runs the kernel (AVX-512F).
bool ShortAttentionAvx512Available();

// REQUIRE: ShortAttentionAvx512Available() and IsShortAttention(d). Same
// arguments and layouts as ShortAttentionForward / Backward.
void ShortAttentionForwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k,
                                 const float* v, float* out, float* lse);
void ShortAttentionBackwardAvx512(const FusedAttentionDesc& d, const float* q, const float* k,
                                  const float* v, const float* out, const float* lse,
                                  const float* dout, float* dq, float* dk, float* dv);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_AVX512_H_
