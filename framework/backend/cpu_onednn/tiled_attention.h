#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_H_

// The CPU fused attention kernel (flash-attention style; Dao et al. 2022,
// FlashAttention-2 2023): queries in tiles of kQueryTile rows against keys
// in tiles of kKeyTile, an online softmax (running max and sum per row), so
// memory is a few tiles per thread plus the per-row log-sum-exp, never
// (T, S). The tile products are oneDNN's sgemm; masks, ALiBi and bucketed biases are
// applied inside the score tile; shared K/V heads (GQA/MQA) are read in
// place. The backward recomputes each probability tile from the saved
// log-sum-exp. Same contract as Backend::FusedAttention (fused_attention.h);
// tested against the reference kernel in backend_conformance_test.cc.
// Token-major calls (FusedAttentionDesc::token_major) read and write the
// same rows H (or G) rows apart: the products' leading dimensions
// (oneDNN 2.6's sgemm packs either into the same panels; the GPT config's
// losses were the same to the bit in both layouts).
//
// Threads (OpenMP): forward over batch x heads x query tiles; backward over
// batch x key/value heads, so that no two threads add into the same dk/dv
// (or dq) rows.
//
// On CPUs with AVX-512F cpu_onednn gives plain attention (masks and
// dropout, head sizes 16, 32, 64) to tiled_attention_avx512.h instead; this
// kernel keeps ALiBi, bucketed biases, soft-caps, sinks, other head sizes,
// decoding and AVX2 CPUs.

#include "framework/backend/fused_attention.h"

namespace tvlab {

void TiledAttentionForward(const FusedAttentionDesc& d, const float* q, const float* k,
                           const float* v, float* out, float* lse);
void TiledAttentionBackward(const FusedAttentionDesc& d, const float* q, const float* k,
                            const float* v, const float* out, const float* lse,
                            const float* dout, float* dq, float* dk, float* dv,
                            float* dbias_table);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_TILED_ATTENTION_H_
