// RMSNorm's own math: the formula on a hand-checkable row, unit RMS of the
// output, no mean subtraction (unlike LayerNorm), a scale but no shift.

#include <cmath>

#include "framework/autograd/ops.h"
#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/norm/rmsnorm/rmsnorm.pb.h"

namespace tvlab {
namespace {

ModelDims Width(int64_t c) {
  ModelDims dims = SmallDims();
  dims.d_model = c;
  return dims;
}

TEST(RmsNorm, MatchesTheFormulaOnAHandCheckedRow) {
  auto norm = MakeNormalization("rmsnorm", Width(4));
  auto params = norm->NamedParameters();
  ASSERT_EQ(params.size(), 1u);  // scale only
  EXPECT_EQ(params[0].first, "weight");
  float* gamma = params[0].second.mutable_value().data();
  gamma[0] = 1.0f, gamma[1] = 2.0f, gamma[2] = 0.5f, gamma[3] = -1.0f;
  Tensor x = Tensor::Zeros({1, 4});
  const float row[] = {1.0f, -2.0f, 3.0f, 4.0f};  // mean(x^2) = 30 / 4 = 7.5
  std::copy(row, row + 4, x.data());
  std::vector<float> y = norm->Forward(Var(x)).value().ToVector();
  const double inv_rms = 1.0 / std::sqrt(7.5 + 1e-6);
  const float want[] = {1.0f, -4.0f, 1.5f, -4.0f};  // x * gamma
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i] * inv_rms, 1e-6) << i;
}

TEST(RmsNorm, OutputHasUnitRootMeanSquareAndKeepsTheMean) {
  auto norm = MakeNormalization("rmsnorm", Width(8));
  Var x = RandomVar({3, 8}, 11, 0.5f, 3.0f);  // all positive: a large mean
  std::vector<float> y = norm->Forward(x).value().ToVector();
  for (int r = 0; r < 3; ++r) {
    double sq = 0.0, mean = 0.0;
    for (int c = 0; c < 8; ++c) sq += y[r * 8 + c] * y[r * 8 + c], mean += y[r * 8 + c] / 8.0;
    EXPECT_NEAR(sq / 8.0, 1.0, 1e-5) << r;
    EXPECT_GT(mean, 0.5) << "RMSNorm must not subtract the mean";
  }
  // Shifting the input changes the output (LayerNorm would not notice).
  Tensor shifted = AddScalar(x, 1.0f).value();
  EXPECT_GT(MaxAbsDiff(norm->Forward(Var(shifted)).value(), norm->Forward(x).value()), 1e-2f);
}

TEST(RmsNorm, NonPositiveEpsIsRejected) {
  const auto* entry = *NormalizationRegistry().Get("rmsnorm");
  RmsNormOptions options;
  options.set_eps(0.0f);
  absl::Status status = entry->validate(options, Width(8));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("options.eps must be > 0 (got 0)"), std::string::npos) << status;
}

}  // namespace
}  // namespace tvlab
