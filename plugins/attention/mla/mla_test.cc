// MLA's own properties: what it caches (the latent and one shared rotary
// key, not per-head keys and values), the sizes its options imply, and
// validation of those options.

#include "framework/attention/kv_cache.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/attention/mla/mla.pb.h"

namespace tvlab {
namespace {

// The sort experiment's sizes: C = 64, H = 4, hs = 16.
ModelDims SortDims() {
  ModelDims d;
  d.d_model = 64, d.num_heads = 4, d.head_dim = 16, d.num_layers = 2, d.max_seq_len = 8;
  return d;
}

const AttentionLayoutEntry& Entry() { return **AttentionLayoutRegistry().Get("mla"); }

std::unique_ptr<AttentionLayout> MakeMla(const MlaOptions& options, const ModelDims& dims) {
  EXPECT_TRUE(Entry().validate(options, dims).ok());
  auto layout = Entry().create(options, dims);
  InitializeParameters(*layout, 5);
  return layout;
}

MlaOptions Options(int kv_latent, int rope, int q_latent = 0) {
  MlaOptions o;
  o.set_kv_latent_dim(kv_latent);
  o.set_rope_head_dim(rope);
  o.set_q_latent_dim(q_latent);
  return o;
}

TEST(Mla, CachesTheLatentAndOneSharedRopeKeyPerToken) {
  auto mla = MakeMla(Options(24, 6), SortDims());
  auto score = MakeAttentionScore("scaled_dot_product", SortDims());
  KvCache cache;
  for (int64_t i = 0; i < 3; ++i) {
    AttentionInput in;
    in.x = RandomVar({2, 1, 64}, 60 + i);
    in.mask = CausalMask(i);
    in.position_offset = i;
    in.score = score.get();
    in.cache = &cache;
    mla->Forward(in);
  }
  EXPECT_EQ(cache.Names(), (std::vector<std::string>{"latent", "rope_key"}));
  EXPECT_EQ(cache.Get("latent").shape(), (Shape{2, 3, 24}));       // (B, S, d_c)
  EXPECT_EQ(cache.Get("rope_key").shape(), (Shape{2, 1, 3, 6}));   // (B, 1, S, d_r)
  // 30 numbers per token against MHA's 2 * H * hs = 128.
  EXPECT_EQ(mla->KvCacheBytesPerToken(1), 30);
  EXPECT_EQ(MakeAttentionLayout("mha", SortDims())->KvCacheBytesPerToken(1), 128);
}

TEST(Mla, DefaultsFollowDeepSeekV2Ratios) {
  // d_c = 4 * hs = 64, d_r = hs / 2 = 8.
  EXPECT_EQ(MakeMla(MlaOptions(), SortDims())->KvCacheBytesPerToken(1), 64 + 8);
  // hs = 2: hs / 2 = 1 is odd, so the rotary part rounds down to none.
  ModelDims tiny = SortDims();
  tiny.d_model = 8, tiny.head_dim = 2;
  EXPECT_EQ(MakeMla(MlaOptions(), tiny)->KvCacheBytesPerToken(1), 8 + 0);
}

TEST(Mla, ParametersFollowThePapersProjections) {
  auto mla = MakeMla(Options(24, 6, 20), SortDims());
  std::map<std::string, Shape> shapes;
  for (auto& [name, var] : mla->NamedParameters()) shapes[name] = var.shape();
  EXPECT_EQ(shapes["w_dq.weight"], (Shape{20, 64}));      // W^DQ: C -> d_c'
  EXPECT_EQ(shapes["w_uq.weight"], (Shape{4 * 10, 20}));  // W^UQ: d_c' -> H * (hs - d_r)
  EXPECT_EQ(shapes["w_qr.weight"], (Shape{4 * 6, 20}));   // W^QR: d_c' -> H * d_r
  EXPECT_EQ(shapes["w_dkv.weight"], (Shape{24, 64}));     // W^DKV: C -> d_c
  EXPECT_EQ(shapes["w_uk.weight"], (Shape{4 * 10, 24}));  // W^UK: d_c -> H * (hs - d_r)
  EXPECT_EQ(shapes["w_uv.weight"], (Shape{4 * 16, 24}));  // W^UV: d_c -> H * hs
  EXPECT_EQ(shapes["w_kr.weight"], (Shape{6, 64}));       // W^KR: C -> d_r, one head
  EXPECT_EQ(shapes["w_o.weight"], (Shape{64, 64}));
}

TEST(Mla, RejectsImpossibleSizesWithTheReason) {
  auto message = [](const MlaOptions& o) {
    return std::string(Entry().validate(o, SortDims()).message());
  };
  EXPECT_NE(message(Options(0, 5)).find("rope_head_dim must be an even number"), std::string::npos);
  EXPECT_NE(message(Options(0, 16)).find("rope_head_dim 16 must be < head_dim 16"),
            std::string::npos);
  EXPECT_NE(message(Options(-1, 0)).find("kv_latent_dim must be >= 0"), std::string::npos);
  EXPECT_NE(message(Options(0, 0, -2)).find("q_latent_dim must be >= 0"), std::string::npos);
  EXPECT_TRUE(Entry().validate(Options(8, 14, 8), SortDims()).ok());
}

}  // namespace
}  // namespace tvlab
