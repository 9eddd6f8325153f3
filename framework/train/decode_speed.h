#ifndef TVLAB_FRAMEWORK_TRAIN_DECODE_SPEED_H_
#define TVLAB_FRAMEWORK_TRAIN_DECODE_SPEED_H_

// How fast a trained decoder generates with its KV cache: greedy decoding of
// one row, one token per step (the cache grows by one position each step),
// timed on the wall clock. What eval.decode_speed_tokens measures after
// training (RunMetrics.decode_tokens_per_second); wall-clock, so it depends
// on the machine and its load.

#include <cstdint>
#include <vector>

#include "framework/model/model.h"

namespace tvlab {

struct DecodeSpeed {
  int64_t tokens = 0;    // generated per timing (the first one included)
  double seconds = 0;    // the fastest of the timings
  std::vector<int32_t> fed;  // the tokens fed, first_token first (the same every timing)
  double tokens_per_second() const { return seconds > 0 ? tokens / seconds : 0; }
};

// Feeds `first_token`, then greedily feeds back the most likely next token
// until `tokens` tokens have been fed, with the KV cache on; `repeats`
// timings, the fastest kept (the least disturbed by other processes).
// Requires: model.SupportsDecoding(), tokens >= 1, repeats >= 1, and tokens
// within the model's positions (model.max_seq_len for bounded positions).
DecodeSpeed MeasureDecodeSpeed(const Model& model, int32_t first_token, int64_t tokens, int repeats);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_DECODE_SPEED_H_
