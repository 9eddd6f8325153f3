// µP's own rules (mup.cc's table): at the base width it is the default
// parametrisation exactly; at 4x the base width hidden matrices train at a
// quarter of the rate, the readout starts twice as large and sees a quarter
// of its input, and attention logits are scaled by sqrt(hs_base) / hs; and
// every combination it has no rule for is refused with the field and fix.

#include <cmath>

#include "framework/interfaces/init.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/init/mup/mup.pb.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

Experiment GoodSpec(int d_model) {
  Experiment spec;
  ModelSpec* m = spec.mutable_model();
  m->set_family(ModelSpec::DECODER_ONLY);
  m->set_d_model(d_model);
  m->set_num_heads(4);
  m->set_num_layers(2);
  m->set_scale_embeddings(false);
  m->mutable_attention()->set_score("scaled_dot_product");
  spec.mutable_train()->mutable_optimizer()->set_plugin("adamw");
  return spec;
}

ModelDims DimsOf(const Experiment& spec) {
  ModelDims d;
  d.d_model = spec.model().d_model();
  d.num_heads = spec.model().num_heads();
  d.head_dim = d.d_model / d.num_heads;
  d.num_layers = spec.model().num_layers();
  return d;
}

MupInitOptions Base(int width) {
  MupInitOptions o;
  o.set_base_width(width);
  return o;
}

absl::Status Validate(const MupInitOptions& o, const Experiment& spec) {
  const InitEntry* entry = *InitRegistry().Get("mup");
  return entry->validate(o, InitArgs{DimsOf(spec), &spec});
}

std::unique_ptr<Initializer> Make(const MupInitOptions& o, const Experiment& spec) {
  const InitEntry* entry = *InitRegistry().Get("mup");
  return entry->create(o, InitArgs{DimsOf(spec), &spec});
}

InitParam Param(const std::string& name, Shape shape, ParamRole role, Init declared) {
  return InitParam{name, std::move(shape), role, declared};
}

TEST(Mup, AtTheBaseWidthItIsTheDefaultParametrisation) {
  const Experiment spec = GoodSpec(64);
  auto mup = Make(Base(64), spec);
  const Init u = Init::Uniform(0.125f);
  for (ParamRole role : {ParamRole::kEmbedding, ParamRole::kHead, ParamRole::kNorm, ParamRole::kBias,
                         ParamRole::kMatrix}) {
    const InitParam p = Param("x", {64, 64}, role, u);
    EXPECT_EQ(mup->InitFor(p).scale, u.scale) << ParamRoleName(role);
    EXPECT_EQ(mup->InitFor(p).kind, u.kind);
    EXPECT_EQ(mup->LrMultiplier(p), 1.0f) << ParamRoleName(role);
  }
  EXPECT_FLOAT_EQ(mup->AttentionScale(16), 1.0f / 4.0f);  // 1/sqrt(hs)
  EXPECT_EQ(mup->HeadInputScale(), 1.0f);
}

TEST(Mup, FourTimesTheBaseWidth) {
  const Experiment spec = GoodSpec(256);
  auto mup = Make(Base(64), spec);
  const Init u = Init::Uniform(1.0f / 16);
  EXPECT_FLOAT_EQ(mup->LrMultiplier(Param("decoder.layers.0.ffn.w_1.weight", {1024, 256}, ParamRole::kMatrix, u)),
                  0.25f);
  EXPECT_EQ(mup->LrMultiplier(Param("embedding.weight", {40, 256}, ParamRole::kEmbedding, Init::Normal(1))), 1.0f);
  EXPECT_EQ(mup->LrMultiplier(Param("head.weight", {40, 256}, ParamRole::kHead, u)), 1.0f);
  EXPECT_EQ(mup->LrMultiplier(Param("decoder.final_norm.weight", {256}, ParamRole::kNorm, Init::Ones())), 1.0f);
  EXPECT_FLOAT_EQ(mup->InitFor(Param("head.weight", {40, 256}, ParamRole::kHead, u)).scale, 2.0f / 16);
  EXPECT_FLOAT_EQ(mup->InitFor(Param("head.bias", {40}, ParamRole::kBias, u)).scale, 2.0f / 16);
  EXPECT_EQ(mup->InitFor(Param("decoder.layers.0.ffn.w_1.weight", {1024, 256}, ParamRole::kMatrix, u)).scale,
            u.scale);
  EXPECT_EQ(mup->InitFor(Param("embedding.weight", {40, 256}, ParamRole::kEmbedding, Init::Normal(1))).scale, 1.0f);
  EXPECT_FLOAT_EQ(mup->AttentionScale(64), 4.0f / 64);  // sqrt(16) / 64: mup's 8/d shape
  EXPECT_FLOAT_EQ(mup->HeadInputScale(), 0.25f);
  MupInitOptions zero = Base(64);
  zero.set_readout_zero_init(true);
  EXPECT_EQ(Make(zero, spec)->InitFor(Param("head.weight", {40, 256}, ParamRole::kHead, u)).kind, Init::kZeros);
  EXPECT_FLOAT_EQ(Make(zero, spec)->InitFor(Param("head.bias", {40}, ParamRole::kBias, u)).scale, 2.0f / 16);
}

TEST(Mup, RefusesWhatItHasNoRuleFor) {
  EXPECT_TRUE(Validate(Base(64), GoodSpec(256)).ok()) << Validate(Base(64), GoodSpec(256));
  EXPECT_THAT(std::string(Validate(Base(0), GoodSpec(256)).message()), HasSubstr("options.base_width must be > 0"));
  EXPECT_THAT(std::string(Validate(Base(66), GoodSpec(256)).message()),
              HasSubstr("must be a multiple of model.num_heads"));
  Experiment scaled = GoodSpec(256);
  scaled.mutable_model()->set_scale_embeddings(true);
  EXPECT_THAT(std::string(Validate(Base(64), scaled).message()),
              HasSubstr("set model { scale_embeddings: false }"));
  Experiment tied = GoodSpec(256);
  tied.mutable_model()->set_tie_embeddings(true);
  EXPECT_THAT(std::string(Validate(Base(64), tied).message()), HasSubstr("model.tie_embeddings"));
  Experiment score = GoodSpec(256);
  score.mutable_model()->mutable_attention()->set_score("dot_product");
  EXPECT_THAT(std::string(Validate(Base(64), score).message()), HasSubstr("model.attention.score is \"dot_product\""));
  Experiment layer = GoodSpec(256);
  layer.mutable_model()->add_layer_overrides()->mutable_attention()->set_score("additive");
  EXPECT_THAT(std::string(Validate(Base(64), layer).message()),
              HasSubstr("model.layer_overrides[0].attention.score is \"additive\""));
  Experiment sgd = GoodSpec(256);
  sgd.mutable_train()->mutable_optimizer()->set_plugin("sgd");
  EXPECT_THAT(std::string(Validate(Base(64), sgd).message()),
              HasSubstr("train.optimizer.plugin is \"sgd\": µP's learning-rate rules here are AdamW's"));
}

}  // namespace
}  // namespace tvlab
