#include "framework/model/multi_token.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/autograd/ops.h"

namespace tvlab {
namespace {

constexpr int32_t kMaxTokens = 8;

float WeightOf(const MultiTokenPredictionSpec& spec, int64_t k) {
  return spec.loss_weights_size() == 0 ? 1.0f : spec.loss_weights(static_cast<int>(k - 2));
}

}  // namespace

MultiTokenHeads::MultiTokenHeads(const MultiTokenPredictionSpec& spec, int64_t d_model, int64_t vocab, bool bias,
                                 const BlockFactory& block, float dropout, const nn::Linear* unembedding)
    : unembedding_(unembedding) {
  BlockFactory head_block = block;
  head_block.make_value_residual = nullptr;
  for (int64_t k = 2; k <= spec.num_tokens(); ++k) {
    const std::string name = absl::StrCat("head_", k);
    Head head;
    if (spec.head() == MultiTokenPredictionSpec::LAYER) {
      head.layer = AddChild(name, std::make_unique<BlockStack>(std::vector<BlockFactory>{head_block}, dropout, false));
    } else {
      head.linear = AddChild(name, std::make_unique<nn::Linear>(d_model, vocab, bias));
    }
    extra_.push_back(head);
    DeclareAuxiliaryLoss(name + "_loss", WeightOf(spec, k));
  }
}

std::vector<Var> MultiTokenHeads::Logits(const Var& h, const StackInput& in) const {
  std::vector<Var> logits;
  for (const Head& head : extra_) {
    if (head.layer != nullptr) {
      logits.push_back(unembedding_->Forward(head.layer->Forward(h, in)));  // (B, T, V)
    } else {
      logits.push_back(head.linear->Forward(h));  // (B, T, V)
    }
  }
  return logits;
}

std::vector<int32_t> MultiTokenHeads::ShiftedTargets(const Batch& batch, int64_t k) {
  const int64_t b = batch.batch, t = batch.length;
  std::vector<int32_t> shifted(b * t, kIgnoreTarget);  // (B, T)
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i + k - 1 < t; ++i) shifted[r * t + i] = batch.targets[r * t + i + k - 1];
  return shifted;
}

void MultiTokenHeads::EmitLosses(const std::vector<Var>& logits, const Batch& batch) const {
  if (!CollectingAuxiliaryOutputs()) return;
  for (size_t i = 0; i < logits.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i) + 2;
    const std::vector<int32_t> targets = ShiftedTargets(batch, k);
    const bool any = std::any_of(targets.begin(), targets.end(), [](int32_t y) { return y != kIgnoreTarget; });
    const Var& y = logits[i];  // (B, T, V)
    // No target k ahead in this batch (rows shorter than k): a zero loss
    // that stays on the tape.
    const Var loss = any ? CrossEntropy(Reshape(y, {y.dim(0) * y.dim(1), y.dim(2)}), targets, kIgnoreTarget)
                         : Scale(Sum(y), 0.0f);
    EmitAuxiliaryLoss(absl::StrCat("head_", k, "_loss"), loss);
  }
}

void ValidateMultiTokenPrediction(const Experiment& spec, Problems* problems) {
  const MultiTokenPredictionSpec& m = spec.model().multi_token_prediction();
  const std::string path = "model.multi_token_prediction";
  if (m.num_tokens() < 0 || m.num_tokens() > kMaxTokens)
    problems->Add(absl::StrCat(path, ".num_tokens must be in [0, ", kMaxTokens, "] (got ", m.num_tokens(),
                               "); 0 or 1 = off, 4 = Gloeckle et al.'s usual n"));
  if (m.speculative_eval_examples() < 0)
    problems->Add(absl::StrCat(path, ".speculative_eval_examples must be >= 0 (got ",
                               m.speculative_eval_examples(), "); 0 = none"));
  const bool on = m.num_tokens() >= 2;
  if (!on) {
    if (m.loss_weights_size() > 0 || m.speculative_eval_examples() > 0)
      problems->Add(absl::StrCat(path, ": loss_weights and speculative_eval_examples need num_tokens >= 2 "
                                       "(got ", m.num_tokens(), "); set num_tokens or remove them"));
    return;
  }
  if (spec.model().family() != ModelSpec::DECODER_ONLY && spec.model().family() != ModelSpec::FAMILY_UNSPECIFIED)
    problems->Add(absl::StrCat(path, ".num_tokens (", m.num_tokens(), "): multi-token prediction is for "
                               "DECODER_ONLY models (got ", ModelSpec::Family_Name(spec.model().family()),
                               "); use a decoder-only model or set num_tokens to 0"));
  if (m.loss_weights_size() > 0 && m.loss_weights_size() != m.num_tokens() - 1)
    problems->Add(absl::StrCat(path, ".loss_weights has ", m.loss_weights_size(), " values; give one per extra "
                               "head (num_tokens - 1 = ", m.num_tokens() - 1, ") or none (1 each)"));
  for (int i = 0; i < m.loss_weights_size(); ++i)
    if (!(m.loss_weights(i) >= 0) || !std::isfinite(m.loss_weights(i)))
      problems->Add(absl::StrCat(path, ".loss_weights[", i, "] must be finite and >= 0 (got ", m.loss_weights(i), ")"));
}

}  // namespace tvlab
