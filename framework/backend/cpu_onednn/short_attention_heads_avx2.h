#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX2_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX2_H_

// The heads-in-lanes short attention kernel (short_attention_heads_avx512.h)
// built for AVX2 CPUs with FMA: eight query heads a block, one in each lane
// of a 256-bit vector, the same plan (short_attention_heads_driver.h) and
// the same IEEE operations in each lane as the AVX-512 build, so the same
// bits. cpu_onednn runs it where the CPU (as capped by ONEDNN_MAX_CPU_ISA)
// has AVX2 and FMA but not AVX-512F, for the calls it takes; the others
// take the portable short kernel (short_attention.h).
//
// Why: without it, an AVX2 CPU ran the sort model's attention unfused (the
// portable short kernel was slower there than the composition of permutes,
// small products and softmax): bench/README.md, "Fused short attention on
// AVX2 CPUs".

#include "framework/backend/fused_attention.h"

namespace tvlab {
namespace onednn {

// Whether the AVX2 build runs `d`: the CPU has AVX2 and FMA,
// IsShortAttention(d), at least 8 query heads in all (B * H), a key/value
// head's query heads in one block of 8, at most 64 queries, head sizes at
// most 64, and a mask without key lengths or documents.
bool HeadsInLanesAvx2Takes(const FusedAttentionDesc& d);

// REQUIRE: HeadsInLanesAvx2Takes(d). The arguments of ShortAttentionForward
// / Backward; both q/k/v layouts.
void HeadsInLanesForwardAvx2(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                             float* lse);
void HeadsInLanesBackwardAvx2(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                              const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX2_H_
