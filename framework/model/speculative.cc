#include "framework/model/speculative.h"

#include <algorithm>

#include "framework/backend/backend.h"
#include "framework/core/check.h"

namespace tvlab {
namespace {

// The greedy token of row 0 at `position` of logits (1, T, V): the first
// largest entry, as Generate's greedy choice.
int32_t ArgmaxAt(const Var& logits, int64_t position) {
  const int64_t v = logits.dim(2);
  // One position's logits copied to the host (an edge: decoding chooses there).
  Tensor row = Tensor::Empty({v});
  CurrentBackend().Copy2D(logits.value().ptr() + position * v, v, row.ptr(), v, 1, v);
  const std::vector<float> host = row.ToVector();
  return static_cast<int32_t>(std::max_element(host.begin(), host.end()) - host.begin());
}

// All heads' logits over `tokens` (one row).
std::vector<Var> Heads(const Model& model, const std::vector<int32_t>& tokens) {
  Batch batch;
  batch.batch = 1;
  batch.length = static_cast<int64_t>(tokens.size());
  batch.inputs = tokens;
  return model.ForwardAllHeads(batch, ForwardContext{});
}

// The block drafted at `position` of one forward's heads: the main head's
// token, then each extra head's.
std::vector<int32_t> Draft(const std::vector<Var>& heads, int64_t position) {
  std::vector<int32_t> block;
  for (const Var& logits : heads) block.push_back(ArgmaxAt(logits, position));
  return block;
}

}  // namespace

SpeculativeResult SpeculativeGreedy(const Model& model, const std::vector<int32_t>& prefix, int64_t max_new,
                                    int64_t max_positions) {
  TVLAB_CHECK(model.NumExtraHeads() > 0) << "self-speculative decoding needs model.multi_token_prediction";
  TVLAB_CHECK(!prefix.empty());
  NoGradGuard no_grad;
  SpeculativeResult result;
  // As Generate: the last generated token is never fed, so k new tokens
  // need prefix + k - 1 <= max_positions.
  max_new = std::min<int64_t>(max_new, max_positions - static_cast<int64_t>(prefix.size()) + 1);
  std::vector<int32_t> sequence = prefix;
  std::vector<int32_t> block = Draft(Heads(model, sequence), static_cast<int64_t>(sequence.size()) - 1);
  while (static_cast<int64_t>(result.tokens.size()) < max_new) {
    const int64_t room = std::min<int64_t>(max_new - result.tokens.size(),
                                           max_positions - static_cast<int64_t>(sequence.size()));
    if (room <= 0) {  // no position left to feed: the block's first token is the last
      if (block[0] != kEos) result.tokens.push_back(block[0]);
      break;
    }
    block.resize(std::min<int64_t>(block.size(), room));
    std::vector<int32_t> fed = sequence;
    fed.insert(fed.end(), block.begin(), block.end());
    const std::vector<Var> heads = Heads(model, fed);  // the verifying forward
    ++result.steps;
    const int64_t base = static_cast<int64_t>(sequence.size()) - 1;  // position before block[0]
    int64_t taken = 1;  // block[0] is the main head's own greedy token
    while (taken < static_cast<int64_t>(block.size()) && block[taken] == ArgmaxAt(heads[0], base + taken)) ++taken;
    result.accepted += taken;
    for (int64_t i = 0; i < taken; ++i) {
      if (block[i] == kEos) return result;
      result.tokens.push_back(block[i]);
      sequence.push_back(block[i]);
      if (static_cast<int64_t>(result.tokens.size()) == max_new) return result;
    }
    block = Draft(heads, base + taken);
  }
  return result;
}

}  // namespace tvlab
