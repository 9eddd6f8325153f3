// xPos's own math: queries and keys against the paper's formula in double,
// the scales cancelling to zeta^((n - m) / B) in q.k (so a score decays with
// distance and depends on the offset only), and validation: encoders and a
// scale_base too small for model.max_seq_len are refused.

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/position/xpos/xpos.pb.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

ModelDims DecoderDims() {
  ModelDims dims = SmallDims();
  dims.d_model = 16, dims.num_heads = 2, dims.head_dim = 8, dims.causal = true;
  return dims;
}

std::unique_ptr<PositionEncoding> Make(const XposOptions& options = XposOptions()) {
  const auto* entry = *PositionEncodingRegistry().Get("xpos");
  EXPECT_TRUE(entry->validate(options, DecoderDims()).ok());
  return entry->create(options, DecoderDims());
}

// The paper's formula for one d-wide vector at position p; sign +1 for a
// query, -1 for a key.
std::vector<double> Formula(const float* x, int d, double p, double sign, double scale_base) {
  std::vector<double> y(d);
  for (int i = 0; i < d / 2; ++i) {
    const double angle = p * std::pow(10000.0, -2.0 * i / d);
    const double zeta = (2.0 * i / d + 0.4) / 1.4, scale = std::pow(zeta, sign * p / scale_base);
    const double a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = scale * (a * std::cos(angle) - b * std::sin(angle));
    y[2 * i + 1] = scale * (a * std::sin(angle) + b * std::cos(angle));
  }
  return y;
}

TEST(Xpos, QueriesAndKeysMatchTheFormula) {
  XposOptions options;
  options.set_scale_base(16);  // a visible scale at these positions
  auto xpos = Make(options);
  const int d = 8, t = 3, offset = 20;
  Tensor x = RandomTensor({1, 2, t, d}, 3);
  std::vector<float> q = xpos->RotateQuery(Var(x), offset).value().ToVector();
  std::vector<float> k = xpos->RotateKey(Var(x), offset).value().ToVector();
  for (int row = 0; row < 2 * t; ++row) {
    const double p = offset + row % t;
    std::vector<double> want_q = Formula(x.data() + row * d, d, p, +1, 16);
    std::vector<double> want_k = Formula(x.data() + row * d, d, p, -1, 16);
    for (int c = 0; c < d; ++c) {
      EXPECT_NEAR(q[row * d + c], want_q[c], 1e-6 * std::max(1.0, std::fabs(want_q[c])));
      EXPECT_NEAR(k[row * d + c], want_k[c], 1e-6 * std::max(1.0, std::fabs(want_k[c])));
    }
  }
}

TEST(Xpos, ScoresDecayWithDistanceAndDependOnTheOffsetOnly) {
  XposOptions options;
  options.set_scale_base(8);
  auto xpos = Make(options);
  // A query and key that are the same vector: the unscaled score at equal
  // positions is |x|^2, and with every pair's angle zero at distance 0 the
  // xPos score at distance D is sum_i |x_i|^2 zeta_i^(D / B) cos(D theta_i).
  Var x(RandomTensor({1, 1, 1, 8}, 4));
  auto score = [&](int n, int m) {
    std::vector<float> a = xpos->RotateQuery(x, n).value().ToVector();
    std::vector<float> b = xpos->RotateKey(x, m).value().ToVector();
    double s = 0;
    for (int i = 0; i < 8; ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
  };
  EXPECT_NEAR(score(40, 30), score(12, 2), 1e-4);
  EXPECT_NEAR(score(7, 7), score(0, 0), 1e-5);
  // The envelope: with zeta < 1 the magnitude of any score shrinks with
  // distance; here |q.k| at distance 64 is below (max zeta)^8 * |x|^2.
  const double norm2 = score(0, 0), zeta_max = (6.0 / 8 + 0.4) / 1.4;
  EXPECT_LT(std::fabs(score(64, 0)), std::pow(zeta_max, 64.0 / 8) * norm2);
}

TEST(Xpos, TheSharedRotationPreservesNorms) {
  Var x = RandomVar({1, 1, 4, 8}, 5);
  std::vector<float> y = Make()->RotateQueryOrKey(x, 100).value().ToVector();
  std::vector<float> v = x.value().ToVector();
  for (int row = 0; row < 4; ++row) {
    double a = 0, b = 0;
    for (int c = 0; c < 8; ++c) a += v[row * 8 + c] * v[row * 8 + c], b += y[row * 8 + c] * y[row * 8 + c];
    EXPECT_NEAR(a, b, 1e-5);
  }
}

TEST(Xpos, EncodersAndTooSmallScaleBasesAreRefused) {
  const auto* entry = *PositionEncodingRegistry().Get("xpos");
  ModelDims encoder = DecoderDims();
  encoder.causal = false;
  EXPECT_THAT(std::string(entry->validate(XposOptions(), encoder).message()),
              HasSubstr("it needs a causal stack"));
  ModelDims long_context = DecoderDims();
  long_context.max_seq_len = 100000;  // 100000 / 512 * ln(3.5) = 245 e-folds
  EXPECT_THAT(std::string(entry->validate(XposOptions(), long_context).message()),
              HasSubstr("raise options.scale_base to at least 3132"));
  XposOptions bad;
  bad.set_gamma(0);
  EXPECT_THAT(std::string(entry->validate(bad, DecoderDims()).message()),
              HasSubstr("options.gamma must be > 0"));
}

}  // namespace
}  // namespace tvlab
