// Per-layer patterns (model.layer_overrides) through everything that reads a
// spec: building (each layer gets its own plugins, and only the layers
// named), parameter names and counts, KV-cache bytes, decoding with a cache,
// validation naming the override and the layer, defaults and automatic
// sizes, spec.resolved.pbtxt (per-layer result, read back unchanged), --set
// on an override, weights read back into a model built from the resolved
// spec, runtime.attention "fused" refused per layer, and metrics.json's
// per-layer parameters and attention calls per path.

#include <fstream>
#include <sstream>

#include "framework/autograd/ops.h"
#include "framework/data/load_task.h"
#include "framework/model/model.h"
#include "framework/schema/spec_text.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "framework/train/checkpoint.h"
#include "framework/train/run_experiment.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

// A spec with `model_fields` (family, sizes, overrides), resolved as the run
// binary resolves one: sorting digits for an encoder, copying (sequence
// pairs) for the generating families.
absl::StatusOr<Experiment> Load(const std::string& model_fields, const std::vector<std::string>& overrides = {}) {
  const bool encoder_only = model_fields.find("ENCODER_ONLY") != std::string::npos;
  auto parsed = ParseSpecText(absl::StrCat("name: \"pattern\"\nmodel { d_model: 16 num_heads: 4 d_ff: 32 dropout: 0 ",
                                           model_fields, " }\ntask { plugin: \"", encoder_only ? "sort_digits" : "copy",
                                           "\" }\ntrain { steps: 3 batch_size: 4 log_every: 1 }\n"
                                           "eval { examples: 8 decode_examples: 2 }\n"),
                              "pattern.pbtxt");
  if (!parsed.ok()) return parsed.status();
  return ResolveExperiment(*parsed, overrides, "pattern.pbtxt", "pattern");
}

Experiment MustLoad(const std::string& model_fields, const std::vector<std::string>& overrides = {}) {
  auto spec = Load(model_fields, overrides);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : Experiment();
}

std::string Error(const std::string& model_fields, const std::vector<std::string>& overrides = {}) {
  auto spec = Load(model_fields, overrides);
  return spec.ok() ? "(valid)" : std::string(spec.status().message());
}

const char kGqaOnLayerOne[] =
    "layer_overrides { layers: [1] attention { layout: \"gqa\" "
    "layout_options { [type.googleapis.com/tvlab.GqaOptions] { num_kv_heads: 2 } } } }";

std::map<std::string, Shape> Shapes(const Module& model) {
  std::map<std::string, Shape> out;
  for (const auto& [name, var] : model.NamedParameters()) out[name] = var.value().shape();
  return out;
}

TEST(LayerPatterns, OnlyTheNamedLayersGetTheOverride) {
  auto model = *BuildModel(MustLoad(absl::StrCat("family: ENCODER_ONLY num_layers: 3 ", kGqaOnLayerOne)), 10);
  const auto shapes = Shapes(*model);
  EXPECT_EQ(shapes.at("encoder.layers.0.attention.w_k.weight"), (Shape{16, 16}));  // mha
  EXPECT_EQ(shapes.at("encoder.layers.1.attention.w_k.weight"), (Shape{8, 16}));   // gqa: 2 of 4 heads
  EXPECT_EQ(shapes.at("encoder.layers.2.attention.w_k.weight"), (Shape{16, 16}));
}

TEST(LayerPatterns, APatternRepeatsOverTheStackAndNegativeIndicesCountFromTheEnd) {
  auto model = *BuildModel(MustLoad("family: DECODER_ONLY num_layers: 5 "
                                    "layer_overrides { pattern: \"SSL\" letter: \"L\" ffn { plugin: \"swiglu\" } } "
                                    "layer_overrides { layers: [-1] ffn { plugin: \"gelu\" } }"),
                           10);
  const auto shapes = Shapes(*model);
  // Pattern SSLSS: layer 2 swiglu (a third matrix w_3); the last (4) gelu.
  for (int layer : {0, 1, 3, 4})
    EXPECT_EQ(shapes.count(absl::StrCat("decoder.layers.", layer, ".ffn.w_3.weight")), 0u) << layer;
  EXPECT_EQ(shapes.count("decoder.layers.2.ffn.w_3.weight"), 1u);
}

TEST(LayerPatterns, EncoderDecoderOverridesNameTheirStack) {
  auto model = *BuildModel(MustLoad("family: ENCODER_DECODER num_layers: 2 "
                                    "layer_overrides { stack: DECODER layers: [0] ffn { plugin: \"swiglu\" } }"),
                           10);
  const auto shapes = Shapes(*model);
  EXPECT_EQ(shapes.count("decoder.layers.0.ffn.w_3.weight"), 1u);
  EXPECT_EQ(shapes.count("decoder.layers.1.ffn.w_3.weight"), 0u);
  EXPECT_EQ(shapes.count("encoder.layers.0.ffn.w_3.weight"), 0u);
}

TEST(LayerPatterns, KvCacheBytesAreTheSumOfTheLayers) {
  const int64_t mha = (*BuildModel(MustLoad("family: DECODER_ONLY num_layers: 2"), 10))->KvCacheBytesPerToken(4);
  const int64_t gqa = (*BuildModel(MustLoad("family: DECODER_ONLY num_layers: 2",
                                            {"model.attention.layout=gqa"}),
                                   10))
                          ->KvCacheBytesPerToken(4);
  const int64_t mixed =
      (*BuildModel(MustLoad(absl::StrCat("family: DECODER_ONLY num_layers: 2 ", kGqaOnLayerOne)), 10))
          ->KvCacheBytesPerToken(4);
  EXPECT_LT(gqa, mha);
  EXPECT_EQ(mixed, (mha + gqa) / 2);
}

// A layer's own position acts in its attention: a NoPE layer changes the
// output; naming the model's own position changes nothing (same weights).
TEST(LayerPatterns, APerLayerPositionReachesItsLayer) {
  Batch batch;
  batch.batch = 1, batch.length = 5, batch.inputs = {3, 1, 4, 1, 5};
  auto output = [&](const std::string& overrides) {
    auto model = *BuildModel(MustLoad(absl::StrCat("family: DECODER_ONLY num_layers: 2 position { plugin: \"rope\" } ",
                                                   overrides)),
                             10);
    return model->Forward(batch, {}).value();
  };
  const Tensor rope = output("");
  EXPECT_EQ(MaxAbsDiff(rope, output("layer_overrides { layers: [1] position { plugin: \"rope\" } }")), 0.0f);
  EXPECT_GT(MaxAbsDiff(rope, output("layer_overrides { layers: [1] position { plugin: \"none\" } }")), 1e-4f);
}

// Each layer its own cache: decoding with caches equals recomputing the
// prefix, with layers of different layouts and positions.
TEST(LayerPatterns, CachedDecodingEqualsRecomputation) {
  auto model = *BuildModel(MustLoad(absl::StrCat("family: DECODER_ONLY num_layers: 3 position { plugin: \"rope\" } ",
                                                 kGqaOnLayerOne,
                                                 " layer_overrides { layers: [2] position { plugin: \"alibi\" } }")),
                           10);
  Batch prompt;
  prompt.batch = 2;
  DecodeState cached = model->BeginDecoding(prompt, true), recomputed = model->BeginDecoding(prompt, false);
  const std::vector<std::vector<int32_t>> steps = {{1, 2, 3, 4}, {5, 6}, {7, 8}};
  const std::vector<int64_t> lengths = {2, 1, 1};
  for (size_t i = 0; i < steps.size(); ++i) {
    Tensor a = model->DecodeStep(&cached, steps[i], lengths[i]).value();
    Tensor b = model->DecodeStep(&recomputed, steps[i], lengths[i]).value();
    EXPECT_LE(MaxAbsDiff(a, b), 1e-5f) << "step " << i;
  }
}

TEST(LayerPatterns, ValidationNamesTheOverrideFieldAndTheLayer) {
  const std::string layout = Error(
      "family: ENCODER_ONLY num_layers: 2 layer_overrides { layers: [1] attention { layout: \"gqa\" "
      "layout_options { [type.googleapis.com/tvlab.GqaOptions] { num_kv_heads: 3 } } } }");
  EXPECT_THAT(layout, HasSubstr("model.layer_overrides[0].attention.layout_options (gqa"));
  EXPECT_THAT(layout, HasSubstr("encoder layer 1"));
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 2 layer_overrides { layers: [2] ffn { plugin: \"gelu\" } }"),
              HasSubstr("model.layer_overrides[0].layers[0] (2) is not a layer of the encoder"));
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 2 layer_overrides { ffn { plugin: \"gelu\" } }"),
              HasSubstr("give either layers"));
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 2 "
                    "layer_overrides { pattern: \"SL\" letter: \"G\" ffn { plugin: \"gelu\" } }"),
              HasSubstr("model.layer_overrides[0].letter ('G') must be one letter of pattern \"SL\""));
  EXPECT_THAT(Error("family: DECODER_ONLY num_layers: 2 "
                    "layer_overrides { stack: ENCODER layers: [0] ffn { plugin: \"gelu\" } }"),
              HasSubstr("model.layer_overrides[0].stack (ENCODER) is for ENCODER_DECODER models"));
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 2 "
                    "layer_overrides { layers: [0] position { plugin: \"sinusoidal\" } }"),
              HasSubstr("model.layer_overrides[0].position.plugin: 'sinusoidal' acts on the token embeddings"));
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 2 layer_overrides { layers: [0] ffn { plugin: \"no_such_ffn\" } }"),
              HasSubstr("model.layer_overrides[0].ffn.plugin"));
}

TEST(LayerPatterns, AutomaticSizesAndDefaultsAreResolvedPerOverride) {
  Experiment spec = MustLoad(
      "family: ENCODER_ONLY num_layers: 2 layer_overrides { layers: [1] attention { layout: \"gqa\" } }");
  const std::string text = SpecToText(spec);
  // The override's GQA options, written whole: num_kv_heads 0 resolved to 2.
  EXPECT_THAT(text, HasSubstr("[type.googleapis.com/tvlab.GqaOptions] {\n          num_kv_heads: 2"));
  EXPECT_THAT(text, HasSubstr("#   encoder layer 0: as the model\n"));
  EXPECT_THAT(text, HasSubstr("#   encoder layer 1: attention { score: \"scaled_dot_product\" "));
  EXPECT_THAT(text, HasSubstr("layout: \"gqa\" layout_options { [type.googleapis.com/tvlab.GqaOptions] { "
                              "num_kv_heads: 2 } }"));
  // Read back (as --resume and generate do), the spec resolves to itself.
  auto again = ParseSpecText(text, "spec.resolved.pbtxt");
  ASSERT_TRUE(again.ok()) << again.status();
  auto resolved = ResolveExperiment(*again, {}, "spec.resolved.pbtxt", "pattern");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(SpecToText(*resolved), text);
}

TEST(LayerPatterns, SetReachesAnOverrideAndAppendsOne) {
  Experiment spec = MustLoad(absl::StrCat("family: ENCODER_ONLY num_layers: 2 ", kGqaOnLayerOne),
                             {"model.layer_overrides[0].attention.layout=mqa",
                              "model.layer_overrides[1].pattern=NR", "model.layer_overrides[1].letter=N",
                              "model.layer_overrides[1].position.plugin=none"});
  ASSERT_EQ(spec.model().layer_overrides_size(), 2);
  EXPECT_EQ(spec.model().layer_overrides(0).attention().layout(), "mqa");
  // The GQA options went with the old name.
  EXPECT_THAT(spec.model().layer_overrides(0).attention().layout_options().type_url(), HasSubstr("MqaOptions"));
  EXPECT_EQ(spec.model().layer_overrides(1).position().plugin(), "none");
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 2", {"model.layer_overrides[3].pattern=S"}),
              HasSubstr("name an element as layer_overrides[i] with i in 0..0"));
}

// Weights of a trained run load into the model built from its resolved spec
// (what --resume, generate and --init_from do), layer shapes included, and
// metrics.json counts each layer's parameters.
TEST(LayerPatterns, WeightsRoundTripThroughTheResolvedSpec) {
  Experiment spec = MustLoad(absl::StrCat("family: ENCODER_ONLY num_layers: 2 ", kGqaOnLayerOne));
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/roundtrip";
  std::ostringstream sink;
  auto metrics = RunExperiment(spec, *LoadTask(spec).value(), dir, sink);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const auto& per_layer = metrics->layer_parameters();  // in model order
  ASSERT_EQ(per_layer.size(), 2);
  EXPECT_EQ(per_layer[0].layer(), "encoder.layers.0");
  EXPECT_EQ(per_layer[1].layer(), "encoder.layers.1");
  // GQA's keys and values are half as wide: 2 * (16 * 8 + 8) fewer.
  EXPECT_EQ(per_layer[0].parameters() - per_layer[1].parameters(), 2 * (16 * 8 + 8));
  std::ifstream in(dir + "/spec.resolved.pbtxt");
  std::stringstream text;
  text << in.rdbuf();
  auto recorded = ParseSpecText(text.str(), "spec.resolved.pbtxt");
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  auto model = *BuildModel(*recorded, 10);
  ASSERT_TRUE(LoadWeights(dir + "/model.safetensors", model->NamedParameters()).ok());
}

TEST(LayerPatterns, FusedIsRefusedPerLayerNamingThePluginAndWhy) {
  const std::string error =
      Error("family: ENCODER_ONLY num_layers: 2 layer_overrides { layers: [1] attention { score: \"additive\" } }",
            {"runtime.attention=fused"});
  EXPECT_THAT(error, HasSubstr("runtime.attention is \"fused\", but model.layer_overrides[0].attention.score "
                               "'additive' has no fused kernel"));
  EXPECT_THAT(error, HasSubstr("encoder layer 1"));
  // "auto" runs the layer unfused, as asked.
  EXPECT_TRUE(Load("family: ENCODER_ONLY num_layers: 2 layer_overrides { layers: [1] attention { score: "
                   "\"additive\" } }",
                   {"runtime.attention=auto"})
                  .ok());
  EXPECT_THAT(Error("family: ENCODER_ONLY num_layers: 1", {"runtime.attention=fused", "model.attention.score=additive"}),
              HasSubstr("model.attention.score 'additive' has no fused kernel"));
}

// metrics.json counts the run's attention calls on each path.
TEST(LayerPatterns, MetricsCountAttentionCallsOnEachPath) {
  auto run = [](const std::string& policy) {
    Experiment spec = MustLoad("family: ENCODER_ONLY num_layers: 2", {"runtime.attention=" + policy});
    std::ostringstream sink;
    auto metrics = RunExperiment(spec, *LoadTask(spec).value(),
                                 std::string(getenv("TEST_TMPDIR")) + "/calls_" + policy, sink);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return std::make_pair(metrics->fused_attention_calls(), metrics->unfused_attention_calls());
  };
  const auto [fused_fused, fused_unfused] = run("fused");
  EXPECT_GE(fused_fused, 2 * 3);  // 2 layers x 3 training steps at least
  EXPECT_EQ(fused_unfused, 0);
  const auto [unfused_fused, unfused_unfused] = run("unfused");
  EXPECT_EQ(unfused_fused, 0);
  EXPECT_EQ(unfused_unfused, fused_fused);  // the same calls, the other path
}

}  // namespace
}  // namespace tvlab
