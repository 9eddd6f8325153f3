// DeepNet's init (deepnorm.cc) against the paper's formulas written out
// here independently (Wang et al. 2022: figure 2's rule, table 1's beta, and
// xavier_normal_'s std = gain * sqrt(2 / (fan_in + fan_out))), and the
// combinations with the deepnorm placement it refuses, each naming the field.

#include <cmath>

#include "framework/interfaces/init.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/init/deepnorm/deepnorm.pb.h"
#include "plugins/placement/deepnorm/deepnorm.pb.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

ModelDims Dims(int64_t layers, int64_t decoder_layers) {
  ModelDims d;
  d.d_model = 64;
  d.num_heads = 4;
  d.head_dim = 16;
  d.d_ff = 256;
  d.num_layers = layers;
  d.decoder_layers = decoder_layers;
  return d;
}

std::unique_ptr<Initializer> Make(const ModelDims& dims) {
  return (*InitRegistry().Get("deepnorm"))->create(DeepnormInitOptions(), InitArgs{dims, nullptr});
}

Init For(const Initializer& init, const std::string& name, Shape shape, Init declared) {
  return init.InitFor(InitParam{name, shape, RoleOfParameter(name, static_cast<int64_t>(shape.size())), declared});
}

// torch.nn.init.xavier_normal_(w, gain) for w of shape (out, in).
double XavierStd(double out, double in, double gain) { return gain * std::sqrt(2.0 / (in + out)); }

void ExpectNormal(const Init& got, double std, const std::string& name) {
  EXPECT_EQ(got.kind, Init::kNormal) << name;
  EXPECT_NEAR(got.scale, std, 1e-6 * std) << name;
}

TEST(DeepnormInit, DecoderOnlyFollowsFigureTwoWithBetaOfTableOne) {
  const double beta = 1.0 / std::pow(8.0 * 6.0, 0.25);  // decoder-only, N = 6: (8N)^(-1/4) = 0.3799
  EXPECT_NEAR(beta, 0.3799, 1e-4);
  auto init = Make(Dims(6, 0));
  const Init declared = Init::Uniform(0.125f);
  for (const char* name : {"decoder.layers.0.attention.w_q.weight", "decoder.layers.5.attention.w_k.weight"})
    ExpectNormal(For(*init, name, {64, 64}, declared), XavierStd(64, 64, 1.0), name);
  for (const char* name : {"decoder.layers.0.attention.w_v.weight", "decoder.layers.3.attention.w_o.weight"})
    ExpectNormal(For(*init, name, {64, 64}, declared), XavierStd(64, 64, beta), name);
  ExpectNormal(For(*init, "decoder.layers.1.attention.w_v.weight", {32, 64}, declared), XavierStd(32, 64, beta),
               "a GQA value projection, (G hs, C)");
  ExpectNormal(For(*init, "decoder.layers.2.ffn.w_1.weight", {256, 64}, declared), XavierStd(256, 64, beta), "w_1");
  ExpectNormal(For(*init, "decoder.layers.2.ffn.w_2.weight", {64, 256}, declared), XavierStd(64, 256, beta), "w_2");
  ExpectNormal(For(*init, "decoder.layers.2.ffn.experts.1.w_3.weight", {256, 64}, declared),
               XavierStd(256, 64, beta), "an expert's gate");
  // Biases of the beta-gained layers: declared * beta; of q and k: declared.
  const Init bias = For(*init, "decoder.layers.0.ffn.w_1.bias", {256}, declared);
  EXPECT_EQ(bias.kind, Init::kUniform);
  EXPECT_NEAR(bias.scale, 0.125 * beta, 1e-7);
  EXPECT_NEAR(For(*init, "decoder.layers.0.attention.w_o.bias", {64}, declared).scale, 0.125 * beta, 1e-7);
  EXPECT_EQ(For(*init, "decoder.layers.0.attention.w_q.bias", {64}, declared).scale, 0.125f);
  // Outside the blocks' projections: as declared.
  for (const char* name : {"embedding.weight", "head.weight", "decoder.layers.0.attention.w_dkv.weight",
                           "decoder.layers.0.attention.w_g.weight"}) {
    const Init got = For(*init, name, {64, 64}, declared);
    EXPECT_EQ(got.kind, Init::kUniform) << name;
    EXPECT_EQ(got.scale, 0.125f) << name;
  }
  EXPECT_EQ(For(*init, "decoder.layers.0.ffn_residual.norm.weight", {64}, Init::Ones()).kind, Init::kOnes);
  EXPECT_EQ(init->LrMultiplier(InitParam{"decoder.layers.0.ffn.w_1.weight", {256, 64}, ParamRole::kMatrix,
                                         declared}), 1.0f);
  EXPECT_EQ(init->AttentionScale(16), 0.0f);
  EXPECT_EQ(init->HeadInputScale(), 1.0f);
}

TEST(DeepnormInit, EncoderDecoderStacksHaveTheirOwnBeta) {
  const double n = 6, m = 3;
  const double encoder_beta = 0.87 * std::pow(std::pow(n, 4) * m, -1.0 / 16);  // 0.5190
  const double decoder_beta = std::pow(12.0 * m, -0.25);                        // 0.4082
  EXPECT_NEAR(encoder_beta, 0.5190, 1e-4);
  EXPECT_NEAR(decoder_beta, 0.4082, 1e-4);
  auto init = Make(Dims(6, 3));
  ExpectNormal(For(*init, "encoder.layers.0.attention.w_v.weight", {64, 64}, Init()),
               XavierStd(64, 64, encoder_beta), "encoder");
  ExpectNormal(For(*init, "encoder.layers.5.ffn.w_2.weight", {64, 256}, Init()),
               XavierStd(64, 256, encoder_beta), "encoder ffn");
  ExpectNormal(For(*init, "decoder.layers.0.attention.w_o.weight", {64, 64}, Init()),
               XavierStd(64, 64, decoder_beta), "decoder");
  ExpectNormal(For(*init, "decoder.layers.2.cross_attention.w_v.weight", {64, 64}, Init()),
               XavierStd(64, 64, decoder_beta), "cross-attention value");
  ExpectNormal(For(*init, "decoder.layers.2.cross_attention.w_k.weight", {64, 64}, Init()),
               XavierStd(64, 64, 1.0), "cross-attention key");
  // An encoder-only model of N layers has the one-stack beta.
  ExpectNormal(For(*Make(Dims(2, 0)), "encoder.layers.0.ffn.w_1.weight", {256, 64}, Init()),
               XavierStd(256, 64, std::pow(16.0, -0.25)), "encoder-only");
}

Experiment Spec(const std::string& placement, bool has_scale_init, bool scale_init) {
  Experiment spec;
  ModelSpec* m = spec.mutable_model();
  m->set_family(ModelSpec::DECODER_ONLY);
  m->set_d_model(64);
  m->set_num_heads(4);
  m->set_num_layers(3);
  if (!placement.empty()) m->mutable_norm()->set_placement(placement);
  if (has_scale_init) {
    DeepnormOptions o;
    o.set_scale_init(scale_init);
    m->mutable_norm()->mutable_placement_options()->PackFrom(o);
  }
  return spec;
}

absl::Status Validate(const Experiment& spec, bool allow_other = false) {
  DeepnormInitOptions o;
  o.set_allow_other_placement(allow_other);
  return (*InitRegistry().Get("deepnorm"))->validate(o, InitArgs{Dims(3, 0), &spec});
}

TEST(DeepnormInit, RequiresTheDeepnormPlacementWithoutItsOwnBeta) {
  EXPECT_TRUE(Validate(Spec("deepnorm", true, false)).ok()) << Validate(Spec("deepnorm", true, false));
  const absl::Status twice = Validate(Spec("deepnorm", false, false));
  EXPECT_THAT(twice.message(), HasSubstr("model.norm.placement_options.scale_init is true"));
  EXPECT_THAT(twice.message(), HasSubstr("scale_init: false"));
  EXPECT_THAT(Validate(Spec("deepnorm", true, true)).message(), HasSubstr("beta twice"));
  EXPECT_THAT(Validate(Spec("", false, false)).message(), HasSubstr("model.norm.placement is \"pre_ln"));
  EXPECT_THAT(Validate(Spec("post_ln", false, false)).message(), HasSubstr("allow_other_placement"));
  EXPECT_TRUE(Validate(Spec("post_ln", false, false), true).ok());
  // allow_other_placement does not allow beta twice.
  EXPECT_FALSE(Validate(Spec("deepnorm", false, false), true).ok());
}

TEST(DeepnormInit, ChecksEachLayersPlacementAndDepth) {
  Experiment spec = Spec("deepnorm", true, false);
  LayerOverride* o = spec.mutable_model()->add_layer_overrides();
  o->add_layers(2);
  o->mutable_norm()->set_placement("post_ln");
  const absl::Status status = Validate(spec);
  EXPECT_THAT(status.message(), HasSubstr("model.layer_overrides[0].norm.placement is \"post_ln\""));
  EXPECT_THAT(status.message(), HasSubstr("decoder layer 2"));
  o->mutable_norm()->set_placement("deepnorm");  // the model's options carry over: scale_init false
  EXPECT_TRUE(Validate(spec).ok()) << Validate(spec);
  EXPECT_THAT((*InitRegistry().Get("deepnorm"))->validate(DeepnormInitOptions(), InitArgs{Dims(0, 0), nullptr})
                  .message(),
              HasSubstr("model.num_layers must be > 0"));
}

}  // namespace
}  // namespace tvlab
