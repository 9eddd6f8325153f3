// GPT-2's rule (gpt2.cc): N(0, 0.02) weights and embeddings, zero biases,
// norms as declared, and the residual output projections (attention's w_o,
// the FFN's w_2) at 0.02 / sqrt(2 * layers of their stack).

#include <cmath>

#include "framework/interfaces/init.h"
#include "gtest/gtest.h"
#include "plugins/init/gpt2/gpt2.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<Initializer> Make(const Gpt2InitOptions& o, int64_t layers, int64_t decoder_layers) {
  ModelDims dims;
  dims.d_model = 64;
  dims.num_layers = layers;
  dims.decoder_layers = decoder_layers;
  return (*InitRegistry().Get("gpt2"))->create(o, InitArgs{dims, nullptr});
}

Init For(const Initializer& init, const std::string& name, Shape shape, Init declared) {
  return init.InitFor(InitParam{name, shape, RoleOfParameter(name, static_cast<int64_t>(shape.size())), declared});
}

TEST(Gpt2Init, ScaledResidualProjections) {
  auto init = Make(Gpt2InitOptions(), 6, 0);
  const Init u = Init::Uniform(0.125f);
  for (const char* name : {"decoder.layers.0.attention.w_q.weight", "decoder.layers.5.ffn.w_1.weight",
                           "embedding.weight", "head.weight"}) {
    const Init got = For(*init, name, {64, 64}, u);
    EXPECT_EQ(got.kind, Init::kNormal) << name;
    EXPECT_FLOAT_EQ(got.scale, 0.02f) << name;
  }
  for (const char* name : {"decoder.layers.0.attention.w_o.weight", "decoder.layers.3.ffn.w_2.weight"}) {
    const Init got = For(*init, name, {64, 64}, u);
    EXPECT_EQ(got.kind, Init::kNormal) << name;
    EXPECT_FLOAT_EQ(got.scale, 0.02f / std::sqrt(12.0f)) << name;
  }
  EXPECT_EQ(For(*init, "decoder.layers.0.ffn.w_1.bias", {64}, u).kind, Init::kZeros);
  EXPECT_EQ(For(*init, "decoder.layers.0.ffn_residual.norm.weight", {64}, Init::Ones()).kind, Init::kOnes);
  EXPECT_EQ(init->LrMultiplier(InitParam{"decoder.layers.0.ffn.w_1.weight", {64, 64}, ParamRole::kMatrix, u}), 1.0f);
  EXPECT_EQ(init->AttentionScale(16), 0.0f);
  EXPECT_EQ(init->HeadInputScale(), 1.0f);
}

TEST(Gpt2Init, EachStackCountsItsOwnLayersAndTheScaleCanBeOff) {
  auto init = Make(Gpt2InitOptions(), 4, 2);
  EXPECT_FLOAT_EQ(For(*init, "encoder.layers.0.attention.w_o.weight", {64, 64}, Init()).scale, 0.02f / std::sqrt(8.0f));
  EXPECT_FLOAT_EQ(For(*init, "decoder.layers.0.cross_attention.w_o.weight", {64, 64}, Init()).scale,
                  0.02f / std::sqrt(4.0f));
  Gpt2InitOptions off;
  off.set_scale_residual(false);
  off.set_std(0.01f);
  EXPECT_FLOAT_EQ(For(*Make(off, 4, 0), "decoder.layers.0.ffn.w_2.weight", {64, 64}, Init()).scale, 0.01f);
  Gpt2InitOptions bad;
  bad.set_std(0);
  EXPECT_FALSE((*InitRegistry().Get("gpt2"))->validate(bad, InitArgs{}).ok());
}

}  // namespace
}  // namespace tvlab
