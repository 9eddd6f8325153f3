// model.value_residual: one lambda per layer after the first in each stack
// (parameter count +L-1 per stack), lambda 0 leaves the model as it is
// without the option, and validation refuses layouts whose values cannot be
// mixed (MLA, differential) and per-layer layout overrides, naming the field.

#include <fstream>

#include "framework/attention/attend.h"
#include "framework/autograd/ops.h"
#include "framework/data/sequence_pairs.h"
#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

absl::StatusOr<Experiment> Spec(const std::string& family, const std::string& model_extra) {
  static int made = 0;
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/vr" + std::to_string(made++) + ".pbtxt";
  std::ofstream(path) << "name: \"t\"\nmodel { family: " << family
                      << " d_model: 16 num_layers: 3 num_heads: 4 d_ff: 32 dropout: 0 " << model_extra
                      << " }\ntask { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
                      << "{ min_length: 1 max_length: 6 } } }\ntrain { steps: 1 }\n";
  return LoadExperiment(path, {});
}

TEST(ValueResidual, OneLambdaPerLaterLayerOfEachStack) {
  for (const std::string family : {"DECODER_ONLY", "ENCODER_DECODER"}) {
    auto off = Spec(family, ""), on = Spec(family, "value_residual { enabled: true }");
    ASSERT_TRUE(on.ok()) << on.status();
    auto plain = *BuildModel(*off, 14), mixed = *BuildModel(*on, 14);
    const int64_t stacks = family == "ENCODER_DECODER" ? 2 : 1;
    EXPECT_EQ(mixed->NumParameters() - plain->NumParameters(), stacks * 2) << family;
    for (auto& [name, var] : mixed->NamedParameters())
      if (name.find("value_residual") != std::string::npos) {
        EXPECT_EQ(name.find(".layers.0."), std::string::npos) << name;
        EXPECT_EQ(var.value().ToVector(), std::vector<float>{0.5f}) << name;
      }
  }
}

TEST(ValueResidual, LambdaZeroIsTheModelWithoutIt) {
  // Both on the unfused composition: without value mixing the GQA family may
  // give the fused kernel its projections as they lie (AttendTokenMajor,
  // attend.h), whose last bits are not the composition's.
  SetAttentionKernel(AttentionKernel::kUnfused);
  for (const std::string family : {"DECODER_ONLY", "ENCODER_DECODER"}) {
    auto off = Spec(family, ""), on = Spec(family, "value_residual { enabled: true lambda_init: 0 }");
    auto plain = *BuildModel(*off, 14), mixed = *BuildModel(*on, 14);
    const std::vector<Example> examples = {{{4, 5, 6, 7}, {7, 6, 5, 4}}, {{5, 6}, {6, 5}}};
    const Batch batch =
        family == "ENCODER_DECODER" ? PackEncoderDecoder(examples) : PackDecoderOnly(examples);
    EXPECT_EQ(plain->Forward(batch, {}).value().ToVector(), mixed->Forward(batch, {}).value().ToVector())
        << family;
    // And lambda != 0 changes the logits.
    for (auto& [name, var] : mixed->NamedParameters())
      if (name.find("value_residual") != std::string::npos) var.mutable_value() = Tensor::Full({1}, 0.5f);
    EXPECT_GT(MaxAbsDiff(plain->Forward(batch, {}).value(), mixed->Forward(batch, {}).value()), 1e-4f)
        << family;
  }
  SetAttentionKernel(AttentionKernel::kAuto);
}

// Each layer caches its mixed values; a step's new tokens mix with the first
// layer's values of the same tokens: decoding with the cache equals
// recomputing the whole prefix.
TEST(ValueResidual, KvCacheDecodingEqualsFullRecompute) {
  auto spec = Spec("DECODER_ONLY", "value_residual { enabled: true lambda_init: 0.3 }");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto model = *BuildModel(*spec, 14);
  Batch batch;
  batch.batch = 2;
  DecodeState cached = model->BeginDecoding(batch, true), full = model->BeginDecoding(batch, false);
  const std::vector<std::pair<std::vector<int32_t>, int64_t>> steps = {
      {{4, 5, 6, 7, 8, 9}, 3}, {{10, 11}, 1}, {{12, 3}, 1}};  // (B, t_new) each
  for (const auto& [tokens, t_new] : steps) {
    const Tensor want = model->DecodeStep(&full, tokens, t_new).value();  // (B, t_new, V)
    const Tensor got = model->DecodeStep(&cached, tokens, t_new).value();
    EXPECT_LE(MaxAbsDiff(got, want), 1e-5f) << "step of " << t_new;
  }
  EXPECT_GT(cached.self_caches[1].length(), 0) << "nothing was cached";
}

void ExpectRefused(const std::string& model_extra, const std::string& words) {
  auto spec = Spec("DECODER_ONLY", "value_residual { enabled: true } " + model_extra);
  ASSERT_FALSE(spec.ok()) << model_extra;
  EXPECT_NE(spec.status().message().find("model.value_residual.enabled: decoder layer"), std::string::npos)
      << spec.status();
  EXPECT_NE(spec.status().message().find(words), std::string::npos) << spec.status();
}

TEST(ValueResidual, ValidationRefusesLayoutsWhoseValuesCannotBeMixed) {
  ExpectRefused("attention { layout: \"mla\" }", "'mla'");
  ExpectRefused("attention { layout: \"differential\" }", "'differential'");
  ExpectRefused("layer_overrides { layers: [2] attention { layout: \"mqa\" } }",
                "overrides the attention layout");
}

}  // namespace
}  // namespace tvlab
