// Recurrent mixers (docs/mixers.md) through the spec and the model:
// validation refuses, naming the field, every option a mixer cannot honour
// (per layer of a hybrid too); a hybrid pattern builds, reports KV-cache
// bytes for its softmax layers and a fixed state for its mixer layers, and
// decodes through caches and states to the logits of recomputation.

#include "framework/autograd/ops.h"
#include "framework/data/load_task.h"
#include "framework/interfaces/capabilities.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/model.h"
#include "framework/schema/spec_text.h"
#include "framework/spec/spec_loader.h"
#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

// A decoder-only copying model (d_model 16, 4 heads: hs = 4) with
// `model_fields`, resolved as the run binary resolves it.
absl::StatusOr<Experiment> Load(const std::string& model_fields, const std::vector<std::string>& overrides = {}) {
  auto parsed = ParseSpecText(absl::StrCat("name: \"mixer\"\nmodel { d_model: 16 num_heads: 4 d_ff: 32 dropout: 0 ",
                                           model_fields, " }\ntask { plugin: \"copy\" }\n"
                                           "train { steps: 3 batch_size: 4 log_every: 1 }\n"
                                           "eval { examples: 8 decode_examples: 2 }\n"),
                              "mixer.pbtxt");
  if (!parsed.ok()) return parsed.status();
  return ResolveExperiment(*parsed, overrides, "mixer.pbtxt", "mixer");
}

std::string Error(const std::string& model_fields, const std::vector<std::string>& overrides = {}) {
  auto spec = Load(model_fields, overrides);
  return spec.ok() ? "(valid)" : std::string(spec.status().message());
}

const char kGla[] = "family: DECODER_ONLY num_layers: 2 attention { layout: \"gla\" } position { plugin: \"none\" } ";
const char kHybrid[] =
    "family: DECODER_ONLY num_layers: 4 position { plugin: \"rope\" } "
    "layer_overrides { pattern: \"LLLS\" letter: \"L\" attention { layout: \"gla\" } position { plugin: \"none\" } }";

// Every registered layout declaring kRecurrentMixer (linear_attention, gla,
// retnet, deltanet, gated_deltanet, ...).
std::vector<std::string> RegisteredMixers() {
  const PluginKind& layouts = PluginKindById("attention_layout");
  std::vector<std::string> out;
  for (const std::string& name : layouts.names())
    if (layouts.capabilities(name) & kRecurrentMixer) out.push_back(name);
  return out;
}

TEST(MixerSpec, EveryMixerIsValidAsADecoderWithoutPositionsInAttention) {
  EXPECT_GE(RegisteredMixers().size(), 5u);
  for (const std::string& layout : RegisteredMixers())
    EXPECT_EQ(Error(absl::StrCat("family: DECODER_ONLY num_layers: 1 attention { layout: \"", layout,
                                 "\" } position { plugin: \"sinusoidal\" }")),
              "(valid)")
        << layout;
}

TEST(MixerSpec, RefusesWhatAMixerCannotHonourNamingTheField) {
  EXPECT_THAT(Error(kGla, {"model.attention.window=4"}),
              HasSubstr("model.attention.window is set, but layout 'gla' is a recurrent mixer"));
  for (const char* field : {"logit_softcap=5", "sink=OFF_BY_ONE", "qk_norm=RMSNORM", "output_gate=HEADWISE"}) {
    const std::string name = std::string(field).substr(0, std::string(field).find('='));
    EXPECT_THAT(Error(kGla, {absl::StrCat("model.attention.", field)}),
                HasSubstr(absl::StrCat("model.attention.", name, " is set")))
        << field;
  }
  EXPECT_THAT(Error(kGla, {"model.attention.score=additive"}),
              HasSubstr("model.attention.score is 'additive', but layout 'gla' is a recurrent mixer"));
  EXPECT_THAT(Error("family: DECODER_ONLY num_layers: 1 attention { layout: \"retnet\" } position { plugin: \"rope\" }"),
              HasSubstr("'rope' rotates queries and keys inside attention, but attention layout 'retnet'"));
  EXPECT_THAT(Error("family: DECODER_ONLY num_layers: 1 attention { layout: \"retnet\" } position { plugin: \"alibi\" }"),
              HasSubstr("'alibi' adds a bias to attention logits"));
  EXPECT_THAT(Error(kGla, {"runtime.attention=fused"}), HasSubstr("never runs the fused kernel"));
  EXPECT_THAT(Error(absl::StrCat(kGla, "value_residual { enabled: true }")), HasSubstr("value_residual"));
}

// Validation goes by the capability, so every mixer is refused the same
// options, each error naming the field and the layout.
TEST(MixerSpec, EveryMixerRefusesWhatNoMixerCanHonour) {
  for (const std::string& layout : RegisteredMixers()) {
    const std::string base = absl::StrCat("family: DECODER_ONLY num_layers: 1 attention { layout: \"", layout,
                                          "\" } position { plugin: \"none\" } ");
    const std::string mixer = absl::StrCat("layout '", layout, "' is a recurrent mixer");
    for (const char* field : {"window=4", "logit_softcap=5", "sink=OFF_BY_ONE", "qk_norm=RMSNORM", "output_gate=HEADWISE"}) {
      const std::string name = std::string(field).substr(0, std::string(field).find('='));
      EXPECT_THAT(Error(base, {absl::StrCat("model.attention.", field)}),
                  HasSubstr(absl::StrCat("model.attention.", name, " is set, but ", mixer)))
          << layout << ", " << field;
    }
    EXPECT_THAT(Error(base, {"model.attention.score=additive"}), HasSubstr(mixer)) << layout;
    EXPECT_THAT(Error(base, {"model.position.plugin=rope"}), HasSubstr("'rope' rotates queries and keys")) << layout;
    EXPECT_THAT(Error(base, {"model.position.plugin=alibi"}), HasSubstr("'alibi' adds a bias")) << layout;
    EXPECT_THAT(Error(base, {"runtime.attention=fused"}), HasSubstr("never runs the fused kernel")) << layout;
    EXPECT_THAT(Error(absl::StrCat(base, "value_residual { enabled: true }")), HasSubstr("value_residual")) << layout;
  }
}

TEST(MixerSpec, RefusesAnEncoder) {
  auto parsed = ParseSpecText(
      "name: \"m\"\nmodel { d_model: 16 num_heads: 4 family: ENCODER_ONLY num_layers: 1 attention { layout: "
      "\"linear_attention\" } position { plugin: \"none\" } }\ntask { plugin: \"sort_digits\" }\n"
      "train { steps: 3 batch_size: 4 }\neval { examples: 8 }\n",
      "m.pbtxt");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto spec = ResolveExperiment(*parsed, {}, "m.pbtxt", "m");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("model.family is ENCODER_ONLY, but layout 'linear_attention' is a recurrent mixer"));
}

TEST(MixerSpec, AHybridChecksEachLayerWithItsOwnSettings) {
  EXPECT_EQ(Error(kHybrid), "(valid)");
  // Without its own position the mixer layers would inherit rope.
  const std::string error = Error(
      "family: DECODER_ONLY num_layers: 4 position { plugin: \"rope\" } "
      "layer_overrides { pattern: \"LLLS\" letter: \"L\" attention { layout: \"gla\" } }");
  EXPECT_THAT(error, HasSubstr("'rope' rotates queries and keys inside attention, but attention layout 'gla'"));
  EXPECT_THAT(error, HasSubstr("model.layer_overrides[0]"));
  // A window on the model reaches the mixer layers too, unless they undo it.
  const std::string window = Error(kHybrid, {"model.attention.window=8"});
  EXPECT_THAT(window, HasSubstr("attention.window is set, but layout 'gla' is a recurrent mixer"));
  EXPECT_THAT(window, HasSubstr("decoder layer 0"));
}

TEST(MixerSpec, AHybridReportsKvBytesForSoftmaxLayersAndAStateForMixers) {
  auto hybrid = *BuildModel(*Load(kHybrid), 10);
  auto softmax = *BuildModel(*Load("family: DECODER_ONLY num_layers: 1 position { plugin: \"rope\" }"), 10);
  EXPECT_EQ(hybrid->KvCacheBytesPerToken(4), softmax->KvCacheBytesPerToken(4));  // the one S layer
  EXPECT_EQ(hybrid->RecurrentStateBytes(4), 3 * 4 * 4 * 4 * 4);                   // 3 layers x H x hs x hs floats
  EXPECT_EQ(hybrid->KvCacheBytesBound(4), 0);  // the softmax layer's cache grows
  auto mixers = *BuildModel(*Load(kGla), 10);
  EXPECT_EQ(mixers->KvCacheBytesPerToken(4), 0);
  EXPECT_EQ(mixers->RecurrentStateBytes(4), 2 * 4 * 4 * 4 * 4);
  EXPECT_EQ(mixers->KvCacheBytesBound(4), mixers->RecurrentStateBytes(4));  // never grows
}

TEST(MixerSpec, CachedDecodingOfAHybridEqualsRecomputation) {
  for (const std::string& fields : {std::string(kHybrid), std::string(kGla)}) {
    auto model = *BuildModel(*Load(fields), 10);
    Batch prompt;
    prompt.batch = 2;
    DecodeState cached = model->BeginDecoding(prompt, true), recomputed = model->BeginDecoding(prompt, false);
    const std::vector<std::vector<int32_t>> steps = {{1, 2, 3, 4, 5, 6}, {5, 6}, {7, 8}, {2, 3}};
    const std::vector<int64_t> lengths = {3, 1, 1, 1};
    for (size_t i = 0; i < steps.size(); ++i) {
      Tensor a = model->DecodeStep(&cached, steps[i], lengths[i]).value();
      Tensor b = model->DecodeStep(&recomputed, steps[i], lengths[i]).value();
      EXPECT_LE(MaxAbsDiff(a, b), 1e-5f) << fields << ": step " << i;
    }
  }
}

}  // namespace
}  // namespace tvlab
