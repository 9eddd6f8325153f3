// Position plugins per stack and per layer (PositionEncoding::AtSite, asked
// by BlockStack), with t5_bias, whose tables live there: an encoder-decoder
// has one table for its encoder and one for its decoder (or one per layer),
// each trained by backprop, and decoding with the KV cache equals the full
// forward with either sharing. Also xpos (whose keys and queries differ)
// decodes with the cache as it computes in full.

#include <algorithm>
#include <cmath>
#include <fstream>

#include "framework/autograd/ops.h"
#include "framework/data/sequence_pairs.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::Contains;
using ::testing::Not;

// A small model of `family` on the reverse task with `position` (the
// text of model.position).
Experiment Spec(const std::string& family, const std::string& position) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/sites.pbtxt";
  const std::string task =
      family == "ENCODER_ONLY"
          ? "task { plugin: \"sort_digits\" }"
          : "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] {"
            " min_length: 1 max_length: 6 } } }";
  std::ofstream(path) << "name: \"sites\"\nmodel { family: " << family
                      << " d_model: 16 num_layers: 2 num_heads: 4 d_ff: 32 dropout: 0\n  position { "
                      << position << " } }\n" << task << "\ntrain { steps: 1 }\n";
  auto spec = LoadExperiment(path, {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

std::string T5(bool shared) {
  return std::string("plugin: \"t5_bias\" options { [type.googleapis.com/tvlab.T5BiasOptions] {"
                     " num_buckets: 8 max_distance: 16 share_across_layers: ") +
         (shared ? "true" : "false") + " } }";
}

std::vector<std::string> ParameterNames(const Model& model) {
  std::vector<std::string> names;
  for (auto& [name, var] : model.NamedParameters()) names.push_back(name);
  return names;
}

TEST(PositionSites, EncoderAndDecoderHaveTheirOwnTables) {
  auto shared = *BuildModel(Spec("ENCODER_DECODER", T5(true)), 14);
  EXPECT_THAT(ParameterNames(*shared), Contains("position.encoder.weight"));
  EXPECT_THAT(ParameterNames(*shared), Contains("position.decoder.weight"));
  auto per_layer = *BuildModel(Spec("ENCODER_DECODER", T5(false)), 14);
  for (const char* name : {"position.encoder.0.weight", "position.encoder.1.weight",
                           "position.decoder.0.weight", "position.decoder.1.weight"})
    EXPECT_THAT(ParameterNames(*per_layer), Contains(name));
  auto decoder_only = *BuildModel(Spec("DECODER_ONLY", T5(true)), 14);
  EXPECT_THAT(ParameterNames(*decoder_only), Contains("position.decoder.weight"));
  EXPECT_THAT(ParameterNames(*decoder_only), Not(Contains("position.encoder.weight")));
}

// Backpropagates from `logits` and expects a non-zero gradient on every
// parameter of the position plugin.
void ExpectEveryTableTrained(const Model& model, const Var& logits) {
  Backward(Sum(Mul(logits, logits)));
  int tables = 0;
  for (auto& [name, var] : model.NamedParameters()) {
    if (name.rfind("position.", 0) != 0) continue;
    ASSERT_TRUE(var.grad().defined()) << name;
    float largest = 0.0f;
    for (float g : var.grad().ToVector()) largest = std::max(largest, std::fabs(g));
    EXPECT_GT(largest, 0.0f) << name << " is not used";
    ++tables;
  }
  EXPECT_GT(tables, 0);
}

TEST(PositionSites, EveryTableReceivesAGradient) {
  auto model = *BuildModel(Spec("ENCODER_DECODER", T5(false)), 14);
  ExpectEveryTableTrained(*model, model->Forward(PackEncoderDecoder({{{4, 5, 6, 7}, {7, 6, 5, 4}}}), {}));
  auto encoder = *BuildModel(Spec("ENCODER_ONLY", T5(true)), 10);
  Batch batch;  // one sort_digits-like row of 8 digits
  batch.batch = 1, batch.length = 8, batch.inputs = {3, 1, 4, 1, 5, 9, 2, 6};
  ExpectEveryTableTrained(*encoder, encoder->Forward(batch, {}));
}

// Decodes `batch` with the cache, a prefill of 3 tokens then one at a time,
// and compares every step's logits with the full forward.
void ExpectCachedDecodingEqualsTheFullForward(const Model& model, const Batch& batch,
                                              const std::string& what) {
  Tensor full = model.Forward(batch, {}).value();  // (1, T, V)
  const int64_t v = full.dim(2);
  NoGradGuard no_grad;
  DecodeState state = model.BeginDecoding(batch, /*use_cache=*/true);
  std::vector<int32_t> prefill(batch.inputs.begin(), batch.inputs.begin() + 3);
  std::vector<Tensor> steps = {model.DecodeStep(&state, prefill, 3).value()};
  for (int64_t t = 3; t < batch.length; ++t)
    steps.push_back(model.DecodeStep(&state, {batch.inputs[t]}, 1).value());
  int64_t t = 0;
  for (const Tensor& s : steps)
    for (int64_t i = 0; i < s.dim(1); ++i, ++t)
      for (int64_t c = 0; c < v; ++c)
        ASSERT_NEAR(s.data()[i * v + c], full.data()[t * v + c], 1e-5) << what << " position " << t;
  EXPECT_GT(state.self_caches[0].length(), 0) << what;
}

TEST(PositionSites, CachedDecodingEqualsTheFullForward) {
  const Example example{{4, 5, 6, 7, 8, 9}, {9, 8, 7, 6, 5, 4}};
  for (bool shared : {true, false}) {
    ExpectCachedDecodingEqualsTheFullForward(*BuildModel(Spec("DECODER_ONLY", T5(shared)), 14).value(),
                                             PackDecoderOnly({example}), "decoder-only t5_bias");
    ExpectCachedDecodingEqualsTheFullForward(
        *BuildModel(Spec("ENCODER_DECODER", T5(shared)), 14).value(), PackEncoderDecoder({example}),
        "encoder-decoder t5_bias");
  }
  ExpectCachedDecodingEqualsTheFullForward(
      *BuildModel(Spec("DECODER_ONLY", "plugin: \"xpos\" options { [type.googleapis.com/tvlab.XposOptions] { scale_base: 8 } }"), 14).value(),
      PackDecoderOnly({example}), "xpos");
}

}  // namespace
}  // namespace tvlab
