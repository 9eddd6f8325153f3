// Learned positions: the rows of the table are what gets added, an offset
// picks later rows. (How the table is sized from a spec, and that a longer
// sequence is a validation error: framework/spec/learned_position_spec_test.cc.)

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

TEST(LearnedPosition, AddsTheTableRowsFromTheOffset) {
  ModelDims dims = SmallDims();  // max_seq_len 16, C = 8
  auto pe = MakePositionEncoding("learned", dims);
  auto params = pe->NamedParameters();
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "weight");
  ASSERT_EQ(params[0].second.shape(), (Shape{16, 8}));
  const float* table = params[0].second.value().data();
  Tensor x = RandomTensor({2, 3, 8}, 1);
  std::vector<float> y = pe->AddToEmbeddings(Var(x), 5).value().ToVector();  // rows 5..7
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 8; ++c) {
        int i = (b * 3 + t) * 8 + c;
        EXPECT_EQ(y[i], x.data()[i] + table[(5 + t) * 8 + c]) << b << t << c;
      }
  // The last rows of the table are reachable.
  EXPECT_EQ(pe->AddToEmbeddings(Var(Tensor::Zeros({1, 1, 8})), 15).value().ToVector(),
            std::vector<float>(table + 15 * 8, table + 16 * 8));
}

TEST(LearnedPosition, TableStartsWithTheConfiguredSpread) {
  ModelDims dims = SmallDims();
  dims.max_seq_len = 64, dims.d_model = 32;
  auto pe = MakePositionEncoding("learned", dims);  // init_std 0.02
  std::vector<float> w = pe->NamedParameters()[0].second.value().ToVector();
  double sq = 0.0, mean = 0.0;
  for (float v : w) sq += v * v, mean += v;
  mean /= w.size();
  EXPECT_NEAR(std::sqrt(sq / w.size()), 0.02, 0.002);
  EXPECT_NEAR(mean, 0.0, 0.002);
}

}  // namespace
}  // namespace tvlab
