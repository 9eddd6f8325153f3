#ifndef TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX512_H_
#define TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX512_H_

// The AVX-512 short attention kernel's layout for many small heads: sixteen
// query heads side by side, one in each lane of a vector, so that the
// softmax is the same vector code for all of them and nothing is reduced
// across lanes. A block's q and k (the backward's v and dout too) go into
// lanes with 16 x 16 transposes (transpose16_avx512.h; the first two rounds
// done by the loads); then a query row's logits are S vectors, its max and
// sum over keys are trees of vector operations, and one exponential covers
// all sixteen heads' weights. The weights stay in lanes in memory, and the
// products that use them (out = weights x values, dq, dk, dv) run one head
// at a time on its own rows, each weight broadcast from memory into a
// multiply-add, so no result goes back through a transpose
// (short_attention_heads_avx512_rows.h).
//
// Why: the eight-rows layout (short_attention_avx512.cc) keeps one head's
// keys in the lanes, and at the sort model's shape (256 heads of 8 x 8,
// head size 16) half of every vector is empty and each row's max, sum,
// exp and log run along a chain of shuffles: 51 us a forward call and 83 a
// backward call, some 20 times what its multiply-adds need. Here 40 and 70-72
// (the same shape, hot, alternated; bench/README.md, "Short attention with
// the heads in lanes").
//
// The backward takes dout . out as sum_j p_ij keep_ij dout_i . v_j (equal,
// since out_i = sum_j p_ij keep_ij v_j) from values it has in lanes, and
// does not read out.
//
// The plan (blocks, tasks, buffers, the kept dropout factors, the order of
// a block's steps) is short_attention_heads_driver.h's, shared with the
// AVX2 build (short_attention_heads_avx2.h: eight heads a block, the same
// bits); this file's build supplies the vector steps.
//
// Takes the calls where that layout pays and the masks are the same for
// every batch row (HeadsInLanesTakes); ShortAttentionForwardAvx512 and
// ShortAttentionBackwardAvx512 send them here, the rest to the eight-rows
// layout. Same contract (fused_attention.h), fp32, both q/k/v layouts,
// grouped key/value heads, sinks, dropout (the same factors,
// ShortAttentionKeepFactors; a thread keeps a task's factors in lanes from
// the forward, and the backward of the same stream finds them instead of
// drawing them again). Not the eight-rows layout's bits (another
// sum order): the fused attention conformance suite checks it against the
// reference, short_attention_heads_test against the portable kernel.

#include "framework/backend/fused_attention.h"

namespace tvlab {
namespace onednn {

// Whether the AVX-512 short kernel runs `d` with the heads in lanes: at
// least 16 query heads in all (B * H), a key/value head's query heads in
// one block of 16 (16 % (H / G) == 0), at most 64 queries and head sizes
// at most 64 (a block's rows stay in L1), and a mask without key lengths
// or documents (the same keys visible from every batch row). REQUIRE:
// IsShortAttention(d) and ShortAttentionAvx512Available().
bool HeadsInLanesTakes(const FusedAttentionDesc& d);

// REQUIRE: HeadsInLanesTakes(d). The arguments of ShortAttentionForward /
// Backward.
void HeadsInLanesForward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v, float* out,
                         float* lse);
void HeadsInLanesBackward(const FusedAttentionDesc& d, const float* q, const float* k, const float* v,
                          const float* out, const float* lse, const float* dout, float* dq, float* dk, float* dv);

}  // namespace onednn
}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_BACKEND_CPU_ONEDNN_SHORT_ATTENTION_HEADS_AVX512_H_
