// GQA's own properties: the seed's KV-cache budget (lesson 004, "Tính cache
// của MHA, GQA và MQA"), the query-head-to-group mapping, and validation.

#include "framework/autograd/ops.h"
#include "framework/attention/kv_cache.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/attention/gqa/gqa.pb.h"

namespace tvlab {
namespace {

// 4 query heads of head dim 2, as in the seed's exercise.
ModelDims SeedDims() {
  ModelDims d;
  d.d_model = 8, d.num_heads = 4, d.head_dim = 2, d.num_layers = 2, d.max_seq_len = 8;
  return d;
}

std::unique_ptr<AttentionLayout> MakeGqa(int kv_heads, const ModelDims& dims) {
  GqaOptions options;
  options.set_num_kv_heads(kv_heads);
  const AttentionLayoutEntry* entry = *AttentionLayoutRegistry().Get("gqa");
  EXPECT_TRUE(entry->validate(options, dims).ok());
  auto layout = entry->create(options, dims);
  InitializeParameters(*layout, 3);
  return layout;
}

absl::Status ValidateGqa(int kv_heads, const ModelDims& dims) {
  GqaOptions options;
  options.set_num_kv_heads(kv_heads);
  return (*AttentionLayoutRegistry().Get("gqa"))->validate(options, dims);
}

// Feeds `tokens` tokens one at a time through `layers` self-attention layers
// with a KV cache each; returns the bytes held, at 2 bytes per number.
int64_t CachedBytes(const std::vector<const AttentionLayout*>& layers, int64_t tokens) {
  auto score = MakeAttentionScore("scaled_dot_product", SeedDims());
  std::vector<KvCache> caches(layers.size());
  for (int64_t i = 0; i < tokens; ++i)
    for (size_t l = 0; l < layers.size(); ++l) {
      AttentionInput in;
      in.x = RandomVar({1, 1, 8}, 40 + i);
      in.mask = CausalMask(i);
      in.position_offset = i;
      in.score = score.get();
      in.cache = &caches[l];
      layers[l]->Forward(in);
    }
  int64_t bytes = 0;
  for (const KvCache& cache : caches) bytes += cache.Bytes(2);
  return bytes;
}

TEST(GqaKvCache, MatchesTheSeedsBudget) {
  const ModelDims dims = SeedDims();
  auto mha0 = MakeAttentionLayout("mha", dims), mha1 = MakeAttentionLayout("mha", dims);
  auto gqa0 = MakeGqa(2, dims), gqa1 = MakeGqa(2, dims);
  auto mqa0 = MakeAttentionLayout("mqa", dims), mqa1 = MakeAttentionLayout("mqa", dims);
  // Reported: layers * tokens * bytes per token.
  EXPECT_EQ(2 * 3 * mha0->KvCacheBytesPerToken(2), 192);
  EXPECT_EQ(2 * 3 * gqa0->KvCacheBytesPerToken(2), 96);
  EXPECT_EQ(2 * 3 * mqa0->KvCacheBytesPerToken(2), 48);
  EXPECT_EQ(2 * 4 * gqa0->KvCacheBytesPerToken(2), 128);
  // Stored: what the caches hold after running the tokens.
  EXPECT_EQ(CachedBytes({mha0.get(), mha1.get()}, 3), 192);
  EXPECT_EQ(CachedBytes({gqa0.get(), gqa1.get()}, 3), 96);
  EXPECT_EQ(CachedBytes({mqa0.get(), mqa1.get()}, 3), 48);
  EXPECT_EQ(CachedBytes({gqa0.get(), gqa1.get()}, 4), 128);  // +32 bytes for the 4th token
  // The general rule 2 * L * G * hs * bytes * T.
  for (int g : {1, 2, 4})
    EXPECT_EQ(2 * 3 * MakeGqa(g, dims)->KvCacheBytesPerToken(2), 2 * 2 * g * 2 * 2 * 3) << g;
}

// GQA with G = 2 of 4 heads equals MHA whose key/value projections repeat
// each group's head for its query heads 2g and 2g + 1.
TEST(Gqa, QueryHeadsReadTheirGroupsKeyValueHead) {
  const ModelDims dims = SeedDims();
  auto gqa = MakeGqa(2, dims);
  auto mha = MakeAttentionLayout("mha", dims);
  std::map<std::string, Var> g, m;
  for (auto& [name, var] : gqa->NamedParameters()) g[name] = var;
  for (auto& [name, var] : mha->NamedParameters()) m[name] = var;
  for (const char* name : {"w_q.weight", "w_q.bias", "w_o.weight", "w_o.bias"})
    m[name].mutable_value() = g[name].value().Clone();
  const int64_t hs = 2, c = 8;
  for (const char* proj : {"w_k", "w_v"}) {
    const Tensor& gw = g[std::string(proj) + ".weight"].value();  // (G * hs, C)
    const Tensor& gb = g[std::string(proj) + ".bias"].value();    // (G * hs)
    Tensor& mw = m[std::string(proj) + ".weight"].mutable_value();  // (H * hs, C)
    Tensor& mb = m[std::string(proj) + ".bias"].mutable_value();    // (H * hs)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t r = 0; r < hs; ++r) {
        const int64_t group_row = (h / 2) * hs + r, head_row = h * hs + r;
        for (int64_t j = 0; j < c; ++j) mw.data()[head_row * c + j] = gw.data()[group_row * c + j];
        mb.data()[head_row] = gb.data()[group_row];
      }
  }
  auto score = MakeAttentionScore("scaled_dot_product", dims);
  AttentionInput in;
  in.x = RandomVar({2, 5, 8}, 50);
  in.mask = CausalMask(0);
  in.score = score.get();
  EXPECT_LE(MaxAbsDiff(gqa->Forward(in).value(), mha->Forward(in).value()), 1e-6f);
}

TEST(Gqa, RejectsKvHeadsThatDoNotDivideTheQueryHeads) {
  absl::Status s = ValidateGqa(3, SeedDims());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("num_kv_heads 3 does not divide model.num_heads 4"),
            std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1, 2, 4"), std::string::npos) << s.message();
  EXPECT_FALSE(ValidateGqa(-1, SeedDims()).ok());
  EXPECT_FALSE(ValidateGqa(8, SeedDims()).ok());
  EXPECT_TRUE(ValidateGqa(4, SeedDims()).ok());
}

TEST(Gqa, DefaultIsHalfTheQueryHeadsAndNeedsAnEvenCount) {
  ModelDims dims = SeedDims();
  EXPECT_EQ(MakeGqa(0, dims)->KvCacheBytesPerToken(1), 2 * 2 * 2);  // G = 2
  dims.num_heads = 3;
  absl::Status s = ValidateGqa(0, dims);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("odd"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1, 3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tvlab
