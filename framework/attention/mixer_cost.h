#ifndef TVLAB_FRAMEWORK_ATTENTION_MIXER_COST_H_
#define TVLAB_FRAMEWORK_ATTENTION_MIXER_COST_H_

// Forward FLOPs of the recurrent mixers' token mixing in their training
// form, the chunked one (gated_linear.h, delta_rule.h), for
// AttentionLayout::MixingFlopsPerToken. Counted: every matrix product
// between q, k, v, the state and the (n, n) matrices of a chunk of n
// tokens, at 2 FLOPs per multiply-add, as the chunked forms compute them
// (dense (n, n) products, masked rather than skipped; no state read in the
// first chunk, whose state is zero). Left out, like softmax's exp in the
// softmax formula: elementwise work (gates, decays, beta, masks) and the
// gates' cumulative sums (a matmul with a ones matrix in the composition,
// n adds in the fused scan): O(n d) per chunk.
//
// Per head and chunk of n tokens (chunk i = 0, 1, ...; T = sum of n, the
// last chunk shorter when chunk does not divide T):
//   gated linear (linear attention, GLA, RetNet, Mamba-2's SSD):
//     2 n^2 dk (Q K^T) + 2 n^2 dv (x V) + 2 n dk dv (K^T V: state update)
//     + [i > 0] 2 n dk dv (Q S: state read)
//   delta rule (DeltaNet, Gated DeltaNet; WY form):
//     2 n^2 dk (K K^T) + 2 n^2 (n - 1) ((I + A)^{-1} by n - 1 rank-1
//     updates) + 2 n^2 dv (U = T V) + 2 n^2 dk + 2 n^2 dv (O = (Q K^T) U)
//     + 2 n dk dv (K^T U: state update)
//     + [i > 0] (2 n^2 dk (W = T K) + 2 n dk dv (W S) + 2 n dk dv (Q S))
// The per-token cost is the sum over chunks over T: it depends on the
// chunk size, not on T once T >> chunk (unlike softmax's T-proportional
// keys_seen).

#include <cstdint>

namespace tvlab {

struct MixerShape {
  int64_t heads = 0;
  int64_t key_dim = 0;    // dk
  int64_t value_dim = 0;  // dv
  int64_t chunk = 0;      // tokens per chunk of the training form
};

// Forward FLOPs per position, over all heads, for sequences of `seq_len`
// positions (0 when seq_len <= 0). REQUIRES: shape.chunk > 0.
double GatedLinearChunkedFlopsPerToken(const MixerShape& shape, int64_t seq_len);
double DeltaRuleChunkedFlopsPerToken(const MixerShape& shape, int64_t seq_len);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_ATTENTION_MIXER_COST_H_
