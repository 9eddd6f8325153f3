// ALiBi's own math: the paper's slopes, and what a symmetric distance bias
// implies for a bidirectional encoder: reversing the sequence reverses the
// attention output, so mirrored slots (k and T-1-k) cannot be told apart.
// This is why ALiBi cannot learn to sort (docs/plugins.md).

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Alibi, SlopesAreThePapersGeometricSequence) {
  auto alibi = MakePositionEncoding("alibi", SmallDims());
  // One query at position 1, keys 0 and 1: bias[h] = -m_h * 1 for key 0.
  std::vector<float> bias8 = alibi->LogitBias(8, 1, 1, 2).value().ToVector();  // (1, 8, 1, 2)
  for (int h = 0; h < 8; ++h) {
    EXPECT_FLOAT_EQ(bias8[2 * h], -std::pow(2.0f, -(h + 1.0f))) << h;  // 1/2 .. 1/256
    EXPECT_EQ(bias8[2 * h + 1], 0.0f);                                 // itself
  }
  // 6 heads: the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1 and 2^-3.
  std::vector<float> bias6 = alibi->LogitBias(6, 1, 1, 2).value().ToVector();
  const float want[] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f};
  for (int h = 0; h < 6; ++h) EXPECT_FLOAT_EQ(bias6[2 * h], -want[h]) << h;
}

TEST(Alibi, BidirectionalAttentionIsMirrorEquivariant) {
  ModelDims dims = SmallDims();
  auto alibi = MakePositionEncoding("alibi", dims);
  auto layout = MakeAttentionLayout("mha", dims);
  auto score = MakeAttentionScore("scaled_dot_product", dims);
  const int64_t t = 5, c = 8;
  Tensor x = RandomTensor({1, t, c}, 1);
  Tensor reversed = x.Clone();
  for (int64_t i = 0; i < t; ++i)
    std::copy(x.data() + i * c, x.data() + (i + 1) * c, reversed.data() + (t - 1 - i) * c);
  auto run = [&](const Tensor& in) {
    AttentionInput a;
    a.x = Var(in);
    a.score = score.get();
    a.position = alibi.get();
    return layout->Forward(a).value();  // (1, T, C)
  };
  Tensor y = run(x), y_reversed = run(reversed);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < c; ++j)
      EXPECT_NEAR(y.data()[i * c + j], y_reversed.data()[(t - 1 - i) * c + j], 1e-5);
  // The bias does act: without it the output differs.
  AttentionInput plain;
  plain.x = Var(x);
  plain.score = score.get();
  EXPECT_GT(MaxAbsDiff(layout->Forward(plain).value(), y), 1e-3f);
}

}  // namespace
}  // namespace tvlab
