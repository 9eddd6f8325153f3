// The attention variants as a user meets them: the example configs load and
// report their KV cache (the rule 2 * layers * kv_heads * head_dim * bytes,
// or MLA's latent), and bad layout/score options are rejected before
// anything is built, naming the field and the fix.

#include <cstdlib>

#include "framework/model/model.h"
#include "framework/spec/spec_loader.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Config(const std::string& name) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/tvlab/configs/" + name;
}

struct Expected {
  std::string config;
  int64_t kv_bytes_per_token;  // float32, over both layers
};

TEST(AttentionConfigs, EachLoadsAndReportsItsKvCache) {
  // d_model 64, 4 heads of 16, 2 layers, 4 bytes per number.
  const std::vector<Expected> cases = {
      {"sort_digits.pbtxt", 2 * 2 * 4 * 16 * 4},              // MHA: 4 kv heads
      {"sort_digits_dot_product.pbtxt", 2 * 2 * 4 * 16 * 4},  // the score changes nothing cached
      {"sort_digits_additive.pbtxt", 2 * 2 * 4 * 16 * 4},
      {"sort_digits_gqa.pbtxt", 2 * 2 * 2 * 16 * 4},  // 2 kv heads
      {"sort_digits_mqa.pbtxt", 2 * 2 * 1 * 16 * 4},  // 1 kv head
      {"sort_digits_mla.pbtxt", 2 * (32 + 8) * 4},    // latent 32 + rope key 8 per layer
  };
  for (const Expected& c : cases) {
    auto spec = LoadExperiment(Config(c.config), {});
    ASSERT_TRUE(spec.ok()) << c.config << ": " << spec.status();
    auto model = BuildModel(*spec, 10);
    ASSERT_TRUE(model.ok()) << c.config << ": " << model.status();
    EXPECT_EQ((*model)->KvCacheBytesPerToken(4), c.kv_bytes_per_token) << c.config;
  }
}

std::string LoadError(const std::vector<std::string>& overrides) {
  auto spec = LoadExperiment(Config("sort_digits.pbtxt"), overrides);
  return spec.ok() ? "" : std::string(spec.status().message());
}

TEST(AttentionConfigs, GqaGroupsThatDoNotDivideTheHeadsAreRejected) {
  std::string e = LoadError({"model.attention.layout=gqa",
                             "model.attention.layout_options.num_kv_heads=3"});
  EXPECT_NE(e.find("model.attention.layout_options (gqa): num_kv_heads 3 does not divide "
                   "model.num_heads 4; set num_kv_heads to a divisor of model.num_heads (4): "
                   "1, 2, 4"),
            std::string::npos)
      << e;
}

TEST(AttentionConfigs, MlaRopeDimsMustFitTheHead) {
  std::string e = LoadError({"model.attention.layout=mla",
                             "model.attention.layout_options.rope_head_dim=16"});
  EXPECT_NE(e.find("model.attention.layout_options (mla): rope_head_dim 16 must be < head_dim 16"),
            std::string::npos)
      << e;
  e = LoadError({"model.attention.layout=mla", "model.attention.layout_options.rope_head_dim=3"});
  EXPECT_NE(e.find("rope_head_dim must be an even number"), std::string::npos) << e;
}

TEST(AttentionConfigs, MisspeltOptionsListTheRealOnes) {
  std::string e = LoadError({"model.attention.score=additive",
                             "model.attention.score_options.hidden=8"});
  EXPECT_NE(e.find("tvlab.AdditiveOptions has no field 'hidden'; its fields: hidden_size"),
            std::string::npos)
      << e;
}

TEST(AttentionConfigs, OptionsOfTheScoreAndLayoutAreResolvedIntoTheSpec) {
  auto spec = LoadExperiment(Config("sort_digits_mla.pbtxt"),
                             {"model.attention.score=additive"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::string text = SpecToText(*spec);
  EXPECT_NE(text.find("kv_latent_dim: 32"), std::string::npos) << text;
  EXPECT_NE(text.find("q_latent_dim: 0"), std::string::npos) << text;
  EXPECT_NE(text.find("[type.googleapis.com/tvlab.AdditiveOptions]"), std::string::npos) << text;
}

}  // namespace
}  // namespace tvlab
