// Additive score against the formula v^T tanh(W_q q + W_k k) evaluated by
// hand with chosen parameters, and its options.

#include <cmath>
#include <map>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/score/additive/additive.pb.h"

namespace tvlab {
namespace {

const AttentionScoreEntry& Entry() { return **AttentionScoreRegistry().Get("additive"); }

std::unique_ptr<AttentionScore> MakeAdditive(int hidden, int64_t head_dim) {
  AdditiveOptions o;
  o.set_hidden_size(hidden);
  ModelDims dims;
  dims.head_dim = head_dim;
  EXPECT_TRUE(Entry().validate(o, dims).ok());
  auto score = Entry().create(o, dims);
  InitializeParameters(*score, 7);
  return score;
}

TEST(Additive, MatchesTheFormulaWithChosenParameters) {
  auto score = MakeAdditive(3, 2);
  std::map<std::string, Var> p;
  for (auto& [name, var] : score->NamedParameters()) p[name] = var;
  ASSERT_EQ(p.size(), 3u);
  // W_q, W_k (hidden 3, hs 2) and v (3).
  const std::vector<float> wq = {1, 0, 0, 1, 0.5f, -0.5f}, wk = {0, 1, 1, 0, 2, 1},
                           v = {1, -1, 0.25f};
  p["w_q.weight"].mutable_value() = Tensor::FromVector({3, 2}, wq);
  p["w_k.weight"].mutable_value() = Tensor::FromVector({3, 2}, wk);
  p["v"].mutable_value() = Tensor::FromVector({3}, v);
  // B = 1, H = 2, T = 2, S = 3.
  Tensor q = RandomTensor({1, 2, 2, 2}, 70), k = RandomTensor({1, 2, 3, 2}, 71);
  std::vector<float> got = score->Logits(Var(q), Var(k)).value().ToVector();  // (1, 2, 2, 3)
  ASSERT_EQ(got.size(), 12u);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        const float* qi = q.data() + (h * 2 + i) * 2;
        const float* kj = k.data() + (h * 3 + j) * 2;
        double want = 0;
        for (int d = 0; d < 3; ++d)
          want += v[d] * std::tanh(wq[d * 2] * qi[0] + wq[d * 2 + 1] * qi[1] +
                                   wk[d * 2] * kj[0] + wk[d * 2 + 1] * kj[1]);
        EXPECT_NEAR(got[(h * 2 + i) * 3 + j], want, 1e-6) << h << "," << i << "," << j;
      }
}

TEST(Additive, HiddenSizeSetsTheAlignmentWidth) {
  std::map<std::string, Shape> shapes;
  for (auto& [name, var] : MakeAdditive(5, 4)->NamedParameters()) shapes[name] = var.shape();
  EXPECT_EQ(shapes["w_q.weight"], (Shape{5, 4}));
  EXPECT_EQ(shapes["w_k.weight"], (Shape{5, 4}));
  EXPECT_EQ(shapes["v"], (Shape{5}));
  shapes.clear();
  for (auto& [name, var] : MakeAdditive(0, 4)->NamedParameters()) shapes[name] = var.shape();
  EXPECT_EQ(shapes["v"], (Shape{4}));  // 0 = head_dim
}

TEST(Additive, RejectsANegativeHiddenSize) {
  AdditiveOptions o;
  o.set_hidden_size(-3);
  absl::Status s = Entry().validate(o, ModelDims());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("hidden_size must be >= 0 (got -3)"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
