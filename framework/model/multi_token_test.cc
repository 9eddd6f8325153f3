// model.multi_token_prediction: head k's loss is the mean cross-entropy
// against the token k ahead (recomputed here on the host from the logits);
// the extra heads' gradients pass a finite-difference check; the main head
// and evaluation are the model without multi-token prediction's, given the
// same weights; self-speculative decoding gives exactly plain greedy
// decoding's tokens with >= 1 accepted token per step; validation names
// the field.

#include <cmath>
#include <fstream>

#include "framework/autograd/auxiliary_outputs.h"
#include "framework/autograd/gradcheck.h"
#include "framework/autograd/ops.h"
#include "framework/data/sequence_pairs.h"
#include "framework/model/decoding.h"
#include "framework/model/model.h"
#include "framework/model/multi_token.h"
#include "framework/model/speculative.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

constexpr int64_t kVocab = 14;

absl::StatusOr<Experiment> Spec(const std::string& model_extra, const std::string& family = "DECODER_ONLY") {
  static int made = 0;
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/mtp" + std::to_string(made++) + ".pbtxt";
  std::ofstream(path) << "name: \"t\"\nmodel { family: " << family
                      << " d_model: 16 num_layers: 2 num_heads: 4 d_ff: 32 dropout: 0 " << model_extra << " }\n"
                      << "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
                      << "{ min_length: 1 max_length: 6 } } }\ntrain { steps: 1 }\n";
  return LoadExperiment(path, {});
}

std::string Mtp(int n, const std::string& head, const std::string& more = "") {
  return "multi_token_prediction { num_tokens: " + std::to_string(n) + " head: " + head + " " + more + " } ";
}

Batch TwoRows() {
  return PackDecoderOnly({{{4, 5, 6, 7}, {7, 6, 5, 4}}, {{5, 6}, {6, 5}}});
}

// Mean over targets != ignore of -log softmax(logits (B, T, V))[target].
double HostCrossEntropy(const Tensor& logits, const std::vector<int32_t>& targets) {
  const std::vector<float> y = logits.ToVector();
  const int64_t v = logits.shape()[2];
  double sum = 0;
  int64_t count = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == kIgnoreTarget) continue;
    double max = y[i * v], z = 0;
    for (int64_t j = 0; j < v; ++j) max = std::max<double>(max, y[i * v + j]);
    for (int64_t j = 0; j < v; ++j) z += std::exp(y[i * v + j] - max);
    sum += max + std::log(z) - y[i * v + targets[i]];
    ++count;
  }
  return sum / count;
}

TEST(MultiTokenPrediction, HeadLossesAreTheCrossEntropyKAhead) {
  for (const std::string head : {"LAYER", "LINEAR"}) {
    auto spec = Spec(Mtp(3, head, "loss_weights: [0.5, 0.25]"));
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto model = *BuildModel(*spec, kVocab);
    const Batch batch = TwoRows();
    AuxiliaryOutputs auxiliary;
    Var main;
    {
      AuxiliaryScope collect(&auxiliary);
      main = model->Forward(batch, ForwardContext{true, 0, 0});
    }
    const std::vector<Var> all = model->ForwardAllHeads(batch, {});
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(main.value().ToVector(), all[0].value().ToVector()) << head;
    ASSERT_EQ(auxiliary.losses().size(), 2u) << head;
    const float weights[] = {0.5f, 0.25f};
    for (int k = 2; k <= 3; ++k) {
      const AuxiliaryLoss& loss = auxiliary.losses()[k - 2];
      EXPECT_EQ(loss.name, "mtp.head_" + std::to_string(k) + "_loss");
      EXPECT_EQ(loss.coefficient, weights[k - 2]);
      // Head k at position t against the token at t + k: targets[t + k - 1].
      std::vector<int32_t> shifted(batch.targets.size(), kIgnoreTarget);
      for (int64_t r = 0; r < batch.batch; ++r)
        for (int64_t t = 0; t + k - 1 < batch.length; ++t)
          shifted[r * batch.length + t] = batch.targets[r * batch.length + t + k - 1];
      EXPECT_NEAR(loss.loss.value().item(), HostCrossEntropy(all[k - 1].value(), shifted), 1e-5) << head << k;
    }
  }
}

TEST(MultiTokenPrediction, ExtraHeadGradientsMatchFiniteDifferences) {
  for (const std::string head : {"LAYER", "LINEAR"}) {
    auto spec = Spec(Mtp(3, head) + "norm { plugin: \"layernorm\" } ffn { plugin: \"gelu\" }");
    auto model = *BuildModel(*spec, kVocab);
    const Batch batch = TwoRows();
    std::vector<Var> checked;
    for (auto& [name, var] : model->NamedParameters())
      if (name.rfind("mtp.", 0) == 0 || name == "decoder.layers.1.ffn.w_2.weight") checked.push_back(var);
    ASSERT_GT(checked.size(), 1u);
    auto f = [&](const std::vector<Var>&) {
      AuxiliaryOutputs auxiliary;
      AuxiliaryScope collect(&auxiliary);
      model->Forward(batch, ForwardContext{true, 0, 0});
      Var total = Scale(auxiliary.losses()[0].loss, auxiliary.losses()[0].coefficient);
      for (size_t i = 1; i < auxiliary.losses().size(); ++i)
        total = Add(total, Scale(auxiliary.losses()[i].loss, auxiliary.losses()[i].coefficient));
      return total;
    };
    GradCheckResult r = GradCheck(f, checked);
    EXPECT_TRUE(r.ok) << head << ": " << r.message;
  }
}

// Parameters are drawn by (seed, name): the trunk and main head of the model
// with extra heads are the plain model's, and its logits outside training
// (evaluation) and the main logits of a training forward are bit for bit.
TEST(MultiTokenPrediction, MainHeadIsThePlainModel) {
  auto plain = *BuildModel(*Spec(""), kVocab);
  auto mtp = *BuildModel(*Spec(Mtp(4, "LAYER")), kVocab);
  const Batch batch = TwoRows();
  const std::vector<float> want = plain->Forward(batch, {}).value().ToVector();
  EXPECT_EQ(mtp->Forward(batch, {}).value().ToVector(), want);
  AuxiliaryOutputs auxiliary;
  AuxiliaryScope collect(&auxiliary);
  EXPECT_EQ(mtp->Forward(batch, {}).value().ToVector(), want);
  EXPECT_EQ(auxiliary.losses().size(), 3u);
  EXPECT_EQ(mtp->NumExtraHeads(), 3);
}

TEST(MultiTokenPrediction, SelfSpeculativeDecodingIsGreedyDecoding) {
  for (const std::string head : {"LAYER", "LINEAR"}) {
    auto model = *BuildModel(*Spec(Mtp(3, head) + "memory_tokens { count: 1 }"), kVocab);
    for (bool cache : {true, false}) {
      DecodingSpec greedy;
      greedy.set_method(DecodingSpec::GREEDY);
      greedy.set_max_new_tokens(12);
      greedy.set_use_kv_cache(cache);
      for (const std::vector<int32_t>& prompt : std::vector<std::vector<int32_t>>{{1, 4, 5, 3}, {1, 7, 3}, {1}}) {
        const std::vector<int32_t> want = Generate(*model, {}, prompt, greedy, 16, 0);
        const SpeculativeResult got = SpeculativeGreedy(*model, prompt, 12, 16);
        EXPECT_EQ(got.tokens, want) << head << " prompt of " << prompt.size();
        EXPECT_GE(got.AcceptedPerStep(), 1.0);
        EXPECT_GT(got.steps, 0);
        EXPECT_LE(got.steps, static_cast<int64_t>(want.size()) + 1);
      }
    }
  }
}

TEST(MultiTokenPrediction, ShiftedTargetsLookKAhead) {
  Batch batch;
  batch.batch = 1, batch.length = 4;
  batch.targets = {10, 11, 12, 13};
  EXPECT_EQ(MultiTokenHeads::ShiftedTargets(batch, 2), (std::vector<int32_t>{11, 12, 13, kIgnoreTarget}));
  EXPECT_EQ(MultiTokenHeads::ShiftedTargets(batch, 4),
            (std::vector<int32_t>{13, kIgnoreTarget, kIgnoreTarget, kIgnoreTarget}));
}

TEST(MultiTokenPrediction, ValidationNamesTheField) {
  auto Error = [](const std::string& extra, const std::string& family = "DECODER_ONLY") {
    auto spec = Spec(extra, family);
    return spec.ok() ? std::string() : std::string(spec.status().message());
  };
  EXPECT_NE(Error(Mtp(9, "LAYER")).find("model.multi_token_prediction.num_tokens must be in [0, 8]"),
            std::string::npos);
  EXPECT_NE(Error(Mtp(3, "LAYER", "loss_weights: [1]")).find("loss_weights has 1 values"), std::string::npos);
  EXPECT_NE(Error(Mtp(2, "LAYER", "loss_weights: [-1]")).find("loss_weights[0] must be finite and >= 0"),
            std::string::npos);
  EXPECT_NE(Error(Mtp(3, "LAYER"), "ENCODER_DECODER").find("is for DECODER_ONLY models"), std::string::npos);
  EXPECT_NE(Error(Mtp(1, "LAYER", "speculative_eval_examples: 4")).find("need num_tokens >= 2"),
            std::string::npos);
}

}  // namespace
}  // namespace tvlab
