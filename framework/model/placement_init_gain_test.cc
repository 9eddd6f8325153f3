// NormPlacement::SublayerInitGain as BuildModel applies it (DeepNorm's beta,
// Wang et al. 2022, table 1): a deepnorm model's attention value and output
// projections (cross-attention's too) and FFN parameters are the Post-LN
// model's (same seed, same names) times beta of their stack; every other
// parameter is untouched; `scale_init: false` touches nothing.

#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::unique_ptr<Model> Build(const std::string& family, const std::string& placement,
                             const std::string& layers) {
  static int made = 0;
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/spec" + std::to_string(made++) + ".pbtxt";
  std::ofstream(path) << "name: \"t\"\nmodel { family: " << family << " d_model: 16 " << layers
                      << " num_heads: 4 d_ff: 32 dropout: 0 norm { placement: " << placement << " } }\n"
                      << "task { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] "
                      << "{ min_length: 1 max_length: 6 } } }\ntrain { steps: 1 }\n";
  auto spec = LoadExperiment(path, {});
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto model = BuildModel(*spec, 14);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

// beta of the stack `name` belongs to; 1 for parameters DeepNorm leaves alone.
using GainOf = std::function<double(const std::string& name)>;

bool Scaled(const std::string& name) {
  for (const char* part : {".attention.w_v.", ".attention.w_o.", ".cross_attention.w_v.",
                           ".cross_attention.w_o.", ".ffn."})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

void ExpectScaled(const std::string& family, const std::string& layers, const std::string& options,
                  const GainOf& beta) {
  auto post = Build(family, "\"post_ln\"", layers);
  auto deep = Build(family, "\"deepnorm\"" + options, layers);
  std::map<std::string, Var> want;
  for (auto& [name, var] : post->NamedParameters()) want[name] = var;
  int scaled = 0;
  for (auto& [name, var] : deep->NamedParameters()) {
    ASSERT_EQ(want.count(name), 1u) << name;
    const double gain = Scaled(name) ? beta(name) : 1.0;
    scaled += gain != 1.0;
    const std::vector<float> got = var.value().ToVector(), base = want[name].value().ToVector();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], gain * base[i], 1e-6) << name << "[" << i << "]";
  }
  EXPECT_EQ(scaled > 0, options.empty());
}

TEST(PlacementInitGain, DecoderOnlyDeepnormScalesByEightNToTheMinusQuarter) {
  ExpectScaled("DECODER_ONLY", "num_layers: 3", "", [](const std::string&) {
    return std::pow(8.0 * 3, -0.25);
  });
}

TEST(PlacementInitGain, EncoderDecoderStacksHaveTheirOwnBeta) {
  ExpectScaled("ENCODER_DECODER", "num_layers: 2 num_decoder_layers: 3", "",
               [](const std::string& name) {
                 return name.rfind("encoder.", 0) == 0 ? 0.87 * std::pow(16.0 * 3, -1.0 / 16)
                                                       : std::pow(12.0 * 3, -0.25);
               });
}

TEST(PlacementInitGain, ScaleInitFalseLeavesTheInitAlone) {
  ExpectScaled("DECODER_ONLY", "num_layers: 2",
               " placement_options { [type.googleapis.com/tvlab.DeepnormOptions] { scale_init: false } }",
               [](const std::string&) { return 1.0; });
}

}  // namespace
}  // namespace tvlab
