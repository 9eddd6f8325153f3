// Which layers an override names, and how it merges over the model's
// settings: fields it sets win, plugin options follow their plugin name, a
// later override wins over an earlier one, and fields of these messages
// nobody here knows about are overridable too (the merge is generic).

#include "framework/schema/layer_overrides.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

Experiment Parse(const std::string& text) {
  Experiment spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec)) << text;
  return spec;
}

// Options of a "plugin" in tests: any linked message packs into the Any.
const char kModel[] =
    "model { family: DECODER_ONLY num_layers: 6 "
    "attention { score: \"s\" layout: \"a\" layout_options { [type.googleapis.com/tvlab.AdamWSpec] "
    "{ lr: 0.5 beta1: 0.25 } } } norm { plugin: \"n\" placement: \"pre\" } ";

TEST(LayerOverrides, LayersPatternsNegativeIndicesAndStacks) {
  LayerOverride o;
  o.add_layers(1);
  o.add_layers(-1);
  EXPECT_TRUE(OverrideApplies(o, StackRole::kDecoder, 1, 6));
  EXPECT_TRUE(OverrideApplies(o, StackRole::kDecoder, 5, 6));
  EXPECT_FALSE(OverrideApplies(o, StackRole::kDecoder, 4, 6));
  o.set_stack(LayerOverride::ENCODER);
  EXPECT_FALSE(OverrideApplies(o, StackRole::kDecoder, 1, 6));
  EXPECT_TRUE(OverrideApplies(o, StackRole::kEncoder, 1, 6));
  LayerOverride p;
  p.set_pattern("SSSL");
  p.set_letter("L");
  for (int64_t layer = 0; layer < 9; ++layer)
    EXPECT_EQ(OverrideApplies(p, StackRole::kEncoder, layer, 9), layer == 3 || layer == 7) << layer;
  p.add_layers(0);  // both ways at once: invalid, names nothing
  EXPECT_FALSE(OverrideApplies(p, StackRole::kEncoder, 3, 9));
}

TEST(LayerOverrides, SamePluginOptionsMergeFieldByField) {
  Experiment spec = Parse(std::string(kModel) +
                          "layer_overrides { layers: [2] attention { layout_options { "
                          "[type.googleapis.com/tvlab.AdamWSpec] { beta1: 0.75 } } } } }");
  const Experiment layer = LayerExperiment(spec, StackRole::kDecoder, 2);
  AdamWSpec options;
  ASSERT_TRUE(layer.model().attention().layout_options().UnpackTo(&options));
  EXPECT_EQ(options.lr(), 0.5f);  // the model's
  EXPECT_EQ(options.beta1(), 0.75f);  // the override's
  EXPECT_EQ(layer.model().layer_overrides_size(), 0);
  // Other layers: the model's settings.
  const Experiment other = LayerExperiment(spec, StackRole::kDecoder, 1);
  ASSERT_TRUE(other.model().attention().layout_options().UnpackTo(&options));
  EXPECT_EQ(options.beta1(), 0.25f);
}

TEST(LayerOverrides, AnotherPluginStartsFromItsOwnOptions) {
  Experiment spec = Parse(std::string(kModel) + "layer_overrides { layers: [0] attention { layout: \"b\" } } }");
  const Experiment layer = LayerExperiment(spec, StackRole::kDecoder, 0);
  EXPECT_EQ(layer.model().attention().layout(), "b");
  EXPECT_FALSE(layer.model().attention().has_layout_options());  // not the old plugin's
  EXPECT_EQ(layer.model().attention().score(), "s");                // untouched fields stay
}

TEST(LayerOverrides, LaterOverridesWinAndPlainFieldsReplace) {
  Experiment spec = Parse(std::string(kModel) +
                          "layer_overrides { pattern: \"xy\" letter: \"y\" norm { placement: \"post\" } } "
                          "layer_overrides { layers: [3] norm { placement: \"sandwich\" plugin: \"m\" } } }");
  EXPECT_EQ(LayerExperiment(spec, StackRole::kDecoder, 1).model().norm().placement(), "post");
  EXPECT_EQ(LayerExperiment(spec, StackRole::kDecoder, 3).model().norm().placement(), "sandwich");
  EXPECT_EQ(LayerExperiment(spec, StackRole::kDecoder, 3).model().norm().plugin(), "m");
  EXPECT_EQ(LayerExperiment(spec, StackRole::kDecoder, 2).model().norm().placement(), "pre");
  EXPECT_EQ(OverridesOf(spec.model(), StackRole::kDecoder, 3), (std::vector<int>{0, 1}));
}

TEST(LayerOverrides, StacksOfEachFamily) {
  ModelSpec m;
  m.set_family(ModelSpec::ENCODER_DECODER);
  m.set_num_layers(2);
  m.set_num_decoder_layers(3);
  EXPECT_EQ(StacksOf(m).size(), 2u);
  EXPECT_EQ(LayersOf(m, StackRole::kEncoder), 2);
  EXPECT_EQ(LayersOf(m, StackRole::kDecoder), 3);
  m.set_family(ModelSpec::DECODER_ONLY);
  EXPECT_EQ(StacksOf(m), std::vector<StackRole>{StackRole::kDecoder});
  EXPECT_EQ(LayerName(StackRole::kDecoder, 3), "decoder layer 3");
}

}  // namespace
}  // namespace tvlab
