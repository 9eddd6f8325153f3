// RoPE's options beyond RoFormer: partial rotary (only the first pairs turn)
// and frequency scaling (linear, NTK-aware, YaRN, Llama 3), against the
// formulas in double, and the validation of every scaling field.

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugins/position/rope/rope.pb.h"
#include "plugins/position/rope/rope_scaling.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

ModelDims Dims16() {
  ModelDims dims = SmallDims();
  dims.d_model = 32, dims.num_heads = 2, dims.head_dim = 16, dims.max_seq_len = 64;
  return dims;
}

std::unique_ptr<PositionEncoding> Make(const RopeOptions& options, const ModelDims& dims) {
  const auto* entry = *PositionEncodingRegistry().Get("rope");
  EXPECT_TRUE(entry->validate(options, dims).ok()) << entry->validate(options, dims);
  return entry->create(options, dims);
}

// HALVES rotation of one d-wide vector by angles p * theta[i], times gain.
std::vector<double> Turn(const float* x, int d, double p, const std::vector<double>& theta,
                         double gain) {
  std::vector<double> y(d);
  for (int i = 0; i < d / 2; ++i) {
    const double a = x[i], b = x[i + d / 2], angle = p * theta[i];
    y[i] = gain * (a * std::cos(angle) - b * std::sin(angle));
    y[i + d / 2] = gain * (a * std::sin(angle) + b * std::cos(angle));
  }
  return y;
}

std::vector<double> Theta(double base, int d) {
  std::vector<double> theta(d / 2);
  for (int i = 0; i < d / 2; ++i) theta[i] = std::pow(base, -2.0 * i / d);
  return theta;
}

// Rotates (1, 1, T, 16) at offset 5 and compares rows with `want_row`.
template <typename Want>
void ExpectRows(const RopeOptions& options, Want want_row) {
  auto rope = Make(options, Dims16());
  const int d = 16, t = 4, offset = 5;
  Tensor x = RandomTensor({1, 1, t, d}, 7);
  std::vector<float> y = rope->RotateQueryOrKey(Var(x), offset).value().ToVector();
  for (int row = 0; row < t; ++row) {
    std::vector<double> want = want_row(x.data() + row * d, offset + row);
    for (int c = 0; c < d; ++c) EXPECT_NEAR(y[row * d + c], want[c], 2e-6) << row << "," << c;
  }
}

RopeOptions Halves() {
  RopeOptions o;
  o.set_pairing(RopeOptions::HALVES);
  return o;
}

TEST(RopeScaling, PartialRotaryTurnsTheFirstCoordinatesOnly) {
  RopeOptions o = Halves();
  o.set_rotary_fraction(0.25f);  // 4 of 16 turn, with theta over d = 4
  ExpectRows(o, [](const float* x, int p) {
    std::vector<double> y = Turn(x, 4, p, Theta(10000, 4), 1.0);
    for (int c = 4; c < 16; ++c) y.push_back(x[c]);
    return y;
  });
  EXPECT_EQ(RotatedDims(80, 0.4f), 32);  // Phi-2's head
  EXPECT_EQ(RotatedDims(16, 0.3f), 4);   // 4.8 rounded down to even
}

TEST(RopeScaling, LinearDividesPositionsByTheFactor) {
  RopeOptions o = Halves();
  o.mutable_scaling()->set_method(RopeScaling::LINEAR);
  o.mutable_scaling()->set_factor(4);
  ExpectRows(o, [](const float* x, int p) { return Turn(x, 16, p / 4.0, Theta(10000, 16), 1.0); });
}

TEST(RopeScaling, NtkRaisesTheBase) {
  RopeOptions o = Halves();
  o.mutable_scaling()->set_method(RopeScaling::NTK);
  o.mutable_scaling()->set_factor(4);
  const double base = 10000 * std::pow(4.0, 16.0 / 14.0);
  ExpectRows(o, [&](const float* x, int p) { return Turn(x, 16, p, Theta(base, 16), 1.0); });
}

TEST(RopeScaling, YarnMultipliesByItsAttentionFactor) {
  RopeOptions o = Halves();
  o.mutable_scaling()->set_method(RopeScaling::YARN);
  o.mutable_scaling()->set_factor(8);
  RopeScaling resolved = o.scaling();
  ResolveRopeScaling(&resolved, Dims16());
  EXPECT_EQ(resolved.original_max_positions(), 64);  // model.max_seq_len
  EXPECT_FLOAT_EQ(resolved.attention_factor(), 0.1 * std::log(8.0) + 1.0);
  const std::vector<double> theta = ScaledFrequencies(resolved, 10000, 16);
  ExpectRows(o, [&](const float* x, int p) { return Turn(x, 16, p, theta, resolved.attention_factor()); });
  // Edges for L = 64, d = 16: pair index d ln(L / (2 pi r)) / (2 ln base).
  auto index = [](double r) { return 16 * std::log(64 / (2 * kPi * r)) / (2 * std::log(10000.0)); };
  const double low = std::max(0.0, std::floor(index(32))), high = std::ceil(index(1));
  const std::vector<double> plain = Theta(10000, 16);
  for (int i = 0; i < 8; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    EXPECT_NEAR(theta[i], plain[i] * (1 - ramp) + plain[i] / 8 * ramp, 1e-15) << i;
  }
  EXPECT_EQ(theta[0], plain[0]);          // the fastest pair keeps its frequency
  EXPECT_NEAR(theta[7], plain[7] / 8, 1e-15);  // the slowest is interpolated
}

TEST(RopeScaling, Llama3KeepsHighFrequenciesAndDividesLowOnes) {
  RopeScaling s;
  s.set_method(RopeScaling::LLAMA3);
  s.set_factor(8);
  s.set_original_max_positions(64);  // bands: wavelength < 16 kept, > 64 divided
  const std::vector<double> theta = ScaledFrequencies(s, 10000, 16), plain = Theta(10000, 16);
  int kept = 0, divided = 0, blended = 0;
  for (int i = 0; i < 8; ++i) {
    const double wavelength = 2 * kPi / plain[i];
    if (wavelength < 16) {
      EXPECT_EQ(theta[i], plain[i]) << i;
      ++kept;
    } else if (wavelength > 64) {
      EXPECT_DOUBLE_EQ(theta[i], plain[i] / 8) << i;
      ++divided;
    } else {
      const double smooth = (64 / wavelength - 1) / 3;
      EXPECT_DOUBLE_EQ(theta[i], (1 - smooth) * plain[i] / 8 + smooth * plain[i]) << i;
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

TEST(RopeScaling, ScaledRotationStillDependsOnOffsetOnly) {
  RopeOptions o;
  o.mutable_scaling()->set_method(RopeScaling::LLAMA3);
  auto rope = Make(o, Dims16());
  Var q = RandomVar({1, 1, 1, 16}, 1), k = RandomVar({1, 1, 1, 16}, 2);
  auto score = [&](int m, int n) {
    std::vector<float> a = rope->RotateQueryOrKey(q, m).value().ToVector();
    std::vector<float> b = rope->RotateQueryOrKey(k, n).value().ToVector();
    double dot = 0;
    for (int i = 0; i < 16; ++i) dot += a[i] * b[i];
    return dot;
  };
  EXPECT_NEAR(score(9, 3), score(109, 103), 1e-5);
}

absl::Status Check(const RopeOptions& o, const ModelDims& dims = Dims16()) {
  const auto* entry = *PositionEncodingRegistry().Get("rope");
  return entry->validate(o, dims);
}

TEST(RopeScaling, ValidationNamesTheField) {
  RopeOptions o;
  o.set_rotary_fraction(0.1f);  // 1.6 of 16 coordinates: no pair
  EXPECT_THAT(std::string(Check(o).message()), HasSubstr("options.rotary_fraction must be in (0, 1]"));
  o.set_rotary_fraction(1.5f);
  EXPECT_THAT(std::string(Check(o).message()), HasSubstr("options.rotary_fraction"));
  RopeOptions s;
  s.mutable_scaling()->set_method(RopeScaling::LINEAR);
  s.mutable_scaling()->set_factor(1);
  EXPECT_THAT(std::string(Check(s).message()), HasSubstr("options.scaling.factor must be > 1"));
  s.mutable_scaling()->set_factor(4);
  EXPECT_TRUE(Check(s).ok());
  s.mutable_scaling()->set_attention_factor(2);
  EXPECT_THAT(std::string(Check(s).message()), HasSubstr("only with method YARN"));
  s.mutable_scaling()->set_method(RopeScaling::YARN);
  EXPECT_TRUE(Check(s).ok());
  s.mutable_scaling()->set_beta_slow(40);
  EXPECT_THAT(std::string(Check(s).message()), HasSubstr("options.scaling.beta_fast (32)"));
  RopeOptions l;
  l.mutable_scaling()->set_method(RopeScaling::LLAMA3);
  l.mutable_scaling()->set_low_freq_factor(4);
  EXPECT_THAT(std::string(Check(l).message()), HasSubstr("options.scaling.high_freq_factor (4)"));
  RopeOptions n;
  n.mutable_scaling()->set_method(RopeScaling::NTK);
  n.set_rotary_fraction(0.125f);  // 2 coordinates: d / (d - 2) undefined
  EXPECT_THAT(std::string(Check(n).message()), HasSubstr("needs d >= 4"));
}

// Attention turns token-major q and k (B, T, H, hs) where they lie; with a
// partial rotation, YaRN's tables and gain and either pairing that is the
// head-major turn between two permutes, bit for bit.
TEST(RopeScaling, TokenMajorTurnIsTheHeadMajorOne) {
  for (RopeOptions::Pairing pairing : {RopeOptions::HALVES, RopeOptions::INTERLEAVED}) {
    RopeOptions o = Halves();
    o.set_pairing(pairing);
    o.set_rotary_fraction(0.5f);
    o.mutable_scaling()->set_method(RopeScaling::YARN);
    o.mutable_scaling()->set_factor(8);
    auto rope = Make(o, Dims16());
    ASSERT_TRUE(rope->RotatesTokenMajor());
    const std::vector<int> swap = {0, 2, 1, 3};
    Var x(RandomTensor({2, 5, 2, 16}, 12));  // (B, T, H, hs)
    const std::vector<float> token_major = rope->RotateQueryTokenMajor(x, 9).value().ToVector();
    EXPECT_EQ(token_major, Permute(rope->RotateQuery(Permute(x, swap), 9), swap).value().ToVector());
    EXPECT_NE(token_major, Permute(rope->RotateQuery(Permute(x, swap), 8), swap).value().ToVector());
  }
}

}  // namespace
}  // namespace tvlab
