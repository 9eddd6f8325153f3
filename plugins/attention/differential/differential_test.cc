// Differential attention's own properties: two identical maps subtracted
// with lambda = 1 cancel (the paper's noise cancellation, to the last bit),
// grouped key/value heads equal MHA with repeated key/value rows, the
// lambda_init rule, the KV-cache size and validation.

#include <cmath>
#include <map>

#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/attention/differential/differential.pb.h"

namespace tvlab {
namespace {

// 4 heads of 2: 2 differential heads, each q1, q2, k1, k2 of 2 and v of 4.
ModelDims Dims() {
  ModelDims d;
  d.d_model = 8, d.num_heads = 4, d.head_dim = 2, d.num_layers = 2, d.max_seq_len = 8;
  return d;
}

const AttentionLayoutEntry& Entry() { return **AttentionLayoutRegistry().Get("differential"); }

std::unique_ptr<AttentionLayout> Make(const DifferentialOptions& options, const ModelDims& dims) {
  EXPECT_TRUE(Entry().validate(options, dims).ok());
  auto layout = Entry().create(options, dims);
  InitializeParameters(*layout, 5);
  return layout;
}

std::map<std::string, Var> Params(const AttentionLayout& layout) {
  std::map<std::string, Var> out;
  for (auto& [name, var] : layout.NamedParameters()) out[name] = var;
  return out;
}

// Copies rows [from, from + n) of every head pair's first member onto the
// second member in w (pairs of `hs` rows, (2 N hs, C)) and its bias.
void CopyFirstHalfOntoSecond(Var weight, Var bias, int64_t hs, int64_t c) {
  Tensor& w = weight.mutable_value();
  Tensor& b = bias.mutable_value();
  for (int64_t pair = 0; pair < w.dim(0) / (2 * hs); ++pair)
    for (int64_t r = 0; r < hs; ++r) {
      const int64_t first = (2 * pair) * hs + r, second = (2 * pair + 1) * hs + r;
      for (int64_t j = 0; j < c; ++j) w.data()[second * c + j] = w.data()[first * c + j];
      b.data()[second] = b.data()[first];
    }
}

AttentionInput Input(const Var& x, const AttentionScore* score) {
  AttentionInput in;
  in.x = x;
  in.mask = CausalMask(0);
  in.score = score;
  return in;
}

TEST(Differential, IdenticalMapsWithLambdaOneCancel) {
  const ModelDims dims = Dims();
  DifferentialOptions options;
  options.set_lambda_init(0.75f);
  auto layout = Make(options, dims);
  auto p = Params(*layout);
  CopyFirstHalfOntoSecond(p["w_q.weight"], p["w_q.bias"], 2, 8);
  CopyFirstHalfOntoSecond(p["w_k.weight"], p["w_k.bias"], 2, 8);
  // lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + 0.75 = 1.25 - 1 + 0.75 = 1.
  for (const char* name : {"lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"})
    p[name].mutable_value() = Tensor::Zeros({2});
  p["lambda_q1"].mutable_value().data()[0] = static_cast<float>(std::log(1.25));
  p["lambda_k1"].mutable_value().data()[0] = 1.0f;
  auto score = MakeAttentionScore("scaled_dot_product", dims);
  const Tensor y = layout->Forward(Input(RandomVar({2, 5, 8}, 1), score.get())).value();
  // Every head is A v - 1 * A v: only w_o's bias is left of the output.
  const Tensor& bias = p["w_o.bias"].value();
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.data()[i], bias.data()[i % 8], 1e-6) << i;
  // With lambda moved off 1, the maps no longer cancel.
  p["lambda_k1"].mutable_value().data()[0] = 0.5f;
  const Tensor z = layout->Forward(Input(RandomVar({2, 5, 8}, 1), score.get())).value();
  EXPECT_GT(MaxAbsDiff(z, y), 1e-2f);
}

// One key/value head for both differential heads equals two whose
// projections hold the same rows.
TEST(Differential, GroupedKeyValueHeadsEqualRepeatedOnes) {
  const ModelDims dims = Dims();
  DifferentialOptions grouped_options;
  grouped_options.set_num_kv_heads(1);
  auto grouped = Make(grouped_options, dims);
  auto full = Make(DifferentialOptions(), dims);
  auto g = Params(*grouped), m = Params(*full);
  for (const auto& [name, var] : g)
    if (name.rfind("w_k", 0) != 0 && name.rfind("w_v", 0) != 0)
      m[name].mutable_value() = var.value().Clone();
  for (const char* proj : {"w_k", "w_v"}) {
    const Tensor& gw = g[std::string(proj) + ".weight"].value();   // (4, 8): one head's rows
    const Tensor& gb = g[std::string(proj) + ".bias"].value();     // (4)
    Tensor& mw = m[std::string(proj) + ".weight"].mutable_value();  // (8, 8): two heads' rows
    Tensor& mb = m[std::string(proj) + ".bias"].mutable_value();
    for (int64_t row = 0; row < 8; ++row) {
      for (int64_t j = 0; j < 8; ++j) mw.data()[row * 8 + j] = gw.data()[(row % 4) * 8 + j];
      mb.data()[row] = gb.data()[row % 4];
    }
  }
  auto score = MakeAttentionScore("scaled_dot_product", dims);
  Var x = RandomVar({2, 5, 8}, 2);
  EXPECT_LE(MaxAbsDiff(grouped->Forward(Input(x, score.get())).value(),
                       full->Forward(Input(x, score.get())).value()),
            1e-6f);
  EXPECT_EQ(full->KvCacheBytesPerToken(1), 2 * 4 * 2);  // as mha: 2 H hs
  EXPECT_EQ(grouped->KvCacheBytesPerToken(1), 2 * 4 * 2 / 2);
}

TEST(Differential, ResolveRecordsTheLambdaInitOfTheDepthSchedule) {
  ModelDims dims = Dims();
  DifferentialOptions options;
  options.set_lambda_init_rule(DifferentialOptions::DEPTH_SCHEDULE);
  for (const auto& [depth, want] : std::vector<std::pair<int, double>>{
           {1, 0.2}, {2, 0.8 - 0.6 * std::exp(-0.3)}, {100, 0.8}}) {
    DifferentialOptions o = options;
    o.set_depth(depth);
    ASSERT_TRUE(Entry().validate(o, dims).ok());
    Entry().resolve(&o, &dims);
    EXPECT_NEAR(o.lambda_init(), want, 1e-6) << depth;
    EXPECT_EQ(o.num_kv_heads(), 2);
  }
}

TEST(Differential, ValidationNamesTheFieldAndTheFix) {
  ModelDims dims = Dims();
  DifferentialOptions options;
  options.set_num_kv_heads(3);
  absl::Status s = Entry().validate(options, dims);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("num_kv_heads 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1, 2"), std::string::npos) << s.message();
  options.set_num_kv_heads(0);
  options.set_lambda_init(1.0f);
  s = Entry().validate(options, dims);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lambda_init must be in [0, 1)"), std::string::npos) << s.message();
  options.set_lambda_init_rule(DifferentialOptions::DEPTH_SCHEDULE);
  options.set_depth(0);
  EXPECT_FALSE(Entry().validate(options, dims).ok());
  dims.num_heads = 3;
  s = Entry().validate(DifferentialOptions(), dims);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model.num_heads must be even"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tvlab
