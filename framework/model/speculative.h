#ifndef TVLAB_FRAMEWORK_MODEL_SPECULATIVE_H_
#define TVLAB_FRAMEWORK_MODEL_SPECULATIVE_H_

// Self-speculative greedy decoding with multi-token prediction heads
// (Gloeckle et al. 2024, section 3.2; the blockwise parallel decoding of
// Stern et al. 2018): at the end of the accepted sequence the main head's
// greedy token d_1 and the extra heads' greedy drafts d_2 .. d_n form a
// block; one forward over sequence + block gives the main head's greedy
// token after each prefix of the block, and d_i (i >= 2) is accepted while
// it equals the main head's token after d_1 .. d_{i-1}. d_1 is the plain
// greedy token, so every step accepts >= 1 token, and the output is exactly
// plain greedy decoding's (its correctness property); the same forward
// gives the next block (from the last accepted position). Each step
// recomputes the whole sequence (no KV cache: the rejected drafts would
// have to leave it), so the measure is tokens per forward, not speed.

#include <cstdint>
#include <vector>

#include "framework/model/model.h"

namespace tvlab {

struct SpeculativeResult {
  std::vector<int32_t> tokens;  // generated, without EOS
  int64_t steps = 0;            // verifying forwards (the prompt's first forward not counted)
  int64_t accepted = 0;         // tokens accepted by the steps (EOS included; the last
                                // token of a sequence that fills max_positions is not)
  double AcceptedPerStep() const { return steps > 0 ? static_cast<double>(accepted) / steps : 0.0; }
};

// Greedy continuation of `prefix` by a decoder-only `model` with extra
// heads (NumExtraHeads() > 0), until EOS, `max_new` tokens or the
// positions run out (`max_positions`, as Generate in decoding.h).
SpeculativeResult SpeculativeGreedy(const Model& model, const std::vector<int32_t>& prefix, int64_t max_new,
                                    int64_t max_positions);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_MODEL_SPECULATIVE_H_
