#include "framework/train/decode_speed.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// The most likely next token after the last position of logits (1, T, V).
int32_t GreedyNext(const Var& logits) {
  const int64_t t = logits.dim(1), v = logits.dim(2);
  Tensor last = Tensor::Empty({v});  // (V), copied to the host
  CurrentBackend().Copy2D(logits.value().ptr() + (t - 1) * v, v, last.ptr(), v, 1, v);
  const std::vector<float> host = last.ToVector();
  return static_cast<int32_t>(std::max_element(host.begin(), host.end()) - host.begin());
}

}  // namespace

DecodeSpeed MeasureDecodeSpeed(const Model& model, int32_t first_token, int64_t tokens, int repeats) {
  TVLAB_CHECK(model.SupportsDecoding()) << "decode speed needs a model that generates";
  TVLAB_CHECK(tokens >= 1 && repeats >= 1) << "tokens " << tokens << ", repeats " << repeats;
  NoGradGuard no_grad;
  DecodeSpeed speed;
  speed.tokens = tokens;
  speed.seconds = std::numeric_limits<double>::infinity();
  Batch one_row;
  one_row.batch = 1;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<int32_t> fed = {first_token};
    fed.reserve(tokens);
    DecodeState state = model.BeginDecoding(one_row, /*use_cache=*/true);
    Var logits = model.DecodeStep(&state, {first_token}, 1);  // (1, 1, V)
    for (int64_t i = 1; i < tokens; ++i) {
      fed.push_back(GreedyNext(logits));
      logits = model.DecodeStep(&state, {fed.back()}, 1);
    }
    GreedyNext(logits);  // the last token's choice is part of generating it
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    speed.seconds = std::min(speed.seconds, seconds);
    speed.fed = std::move(fed);
  }
  return speed;
}

}  // namespace tvlab
