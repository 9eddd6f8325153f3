// Values against the formula and the seed's printed table (lesson 000):
// position 0 is (0, 1, 0, 1); sin 1 ~ 0.84 and sin 2 ~ 0.91 in the first
// pair; the next pair turns slowly.

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(Sinusoidal, MatchesFormulaAndSeedTable) {
  // The seed prints the first 4 dims of positions 0..2 for d = 8.
  ModelDims dims;
  dims.d_model = 8;
  auto pe = MakePositionEncoding("sinusoidal", dims);
  Var zeros(Tensor::Zeros({1, 3, 8}));
  std::vector<float> p = pe->AddToEmbeddings(zeros, 0).value().ToVector();  // (1, 3, 8)
  EXPECT_EQ(std::vector<float>(p.begin(), p.begin() + 4), (std::vector<float>{0, 1, 0, 1}));
  EXPECT_NEAR(p[8], 0.84f, 0.005);   // sin 1
  EXPECT_NEAR(p[16], 0.91f, 0.005);  // sin 2
  EXPECT_NEAR(p[10], 0.10f, 0.005);  // sin(1 / 10000^(2/8)) = sin 0.1
  EXPECT_NEAR(p[18], 0.20f, 0.005);  // sin 0.2
  // Every entry against the formula.
  for (int pos = 0; pos < 3; ++pos)
    for (int i = 0; i < 8; i += 2) {
      double angle = pos / std::pow(10000.0, i / 8.0);
      EXPECT_NEAR(p[pos * 8 + i], std::sin(angle), 1e-6);
      EXPECT_NEAR(p[pos * 8 + i + 1], std::cos(angle), 1e-6);
    }
  // An offset continues the table: position 2 alone equals row 2.
  std::vector<float> at2 = pe->AddToEmbeddings(Var(Tensor::Zeros({1, 1, 8})), 2).value().ToVector();
  EXPECT_EQ(at2, std::vector<float>(p.begin() + 16, p.end()));
}

TEST(Sinusoidal, OddWidthIsRejected) {
  ModelDims dims;
  dims.d_model = 5;
  const auto* entry = *PositionEncodingRegistry().Get("sinusoidal");
  absl::Status status = entry->validate(*entry->default_options, dims);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("model.d_model must be even (got 5)"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
