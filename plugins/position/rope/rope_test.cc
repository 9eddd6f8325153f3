// RoPE's own math: values against the published formula for both pairings,
// the two pairings are one permutation apart, any even last dimension works
// (MLA's decoupled rope part), the base option, and odd head sizes are
// rejected. The relative-offset and norm properties of seed lesson 002 are in
// the position conformance suite, which every position plugin runs.

#include <cmath>

#include "framework/testing/plugin_test_util.h"
#include "gtest/gtest.h"
#include "plugins/position/rope/rope.pb.h"

namespace tvlab {
namespace {

std::unique_ptr<PositionEncoding> Make(RopeOptions::Pairing pairing, float base = 10000.0f) {
  RopeOptions options;
  options.set_pairing(pairing);
  options.set_base(base);
  return (*PositionEncodingRegistry().Get("rope"))->create(options, SmallDims());
}

// The formula of seed lesson 002 (apply_rope_1d), in double, for one vector
// of size d at position `pos`; `interleaved` picks the pairing.
std::vector<double> Formula(const float* x, int d, double pos, bool interleaved, double base) {
  std::vector<double> y(d);
  for (int i = 0; i < d / 2; ++i) {
    double angle = pos * std::pow(base, -2.0 * i / d);
    int ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + d / 2;
    y[ia] = x[ia] * std::cos(angle) - x[ib] * std::sin(angle);
    y[ib] = x[ia] * std::sin(angle) + x[ib] * std::cos(angle);
  }
  return y;
}

void ExpectFormula(RopeOptions::Pairing pairing, float base) {
  auto rope = Make(pairing, base);
  const int d = 8, t = 5, offset = 3;
  Tensor x = RandomTensor({2, 2, t, d}, 1);  // (B, H, T, hs)
  std::vector<float> y = rope->RotateQueryOrKey(Var(x), offset).value().ToVector();
  for (int row = 0; row < 2 * 2 * t; ++row) {
    std::vector<double> want = Formula(x.data() + row * d, d, offset + row % t,
                                       pairing == RopeOptions::INTERLEAVED, base);
    for (int c = 0; c < d; ++c) EXPECT_NEAR(y[row * d + c], want[c], 1e-6) << row << "," << c;
  }
}

TEST(Rope, InterleavedMatchesTheFormula) { ExpectFormula(RopeOptions::INTERLEAVED, 10000.0f); }
TEST(Rope, HalvesMatchesTheFormula) { ExpectFormula(RopeOptions::HALVES, 10000.0f); }
TEST(Rope, BaseOptionIsUsed) { ExpectFormula(RopeOptions::INTERLEAVED, 100.0f); }

TEST(Rope, PositionZeroIsTheIdentity) {
  Var x = RandomVar({1, 2, 1, 8}, 2);
  EXPECT_EQ(Make(RopeOptions::INTERLEAVED)->RotateQueryOrKey(x, 0).value().ToVector(),
            x.value().ToVector());
}

TEST(Rope, PairingsDifferByAFixedPermutation) {
  // Moving coordinate 2i to i and 2i+1 to i + D/2 turns one into the other.
  const int d = 8;
  Tensor x = RandomTensor({1, 1, 4, d}, 3);
  Tensor permuted = x.Clone();
  for (int row = 0; row < 4; ++row)
    for (int i = 0; i < d / 2; ++i) {
      permuted.data()[row * d + i] = x.data()[row * d + 2 * i];
      permuted.data()[row * d + i + d / 2] = x.data()[row * d + 2 * i + 1];
    }
  std::vector<float> a = Make(RopeOptions::INTERLEAVED)->RotateQueryOrKey(Var(x), 7).value().ToVector();
  std::vector<float> b = Make(RopeOptions::HALVES)->RotateQueryOrKey(Var(permuted), 7).value().ToVector();
  for (int row = 0; row < 4; ++row)
    for (int i = 0; i < d / 2; ++i) {
      EXPECT_EQ(b[row * d + i], a[row * d + 2 * i]);
      EXPECT_EQ(b[row * d + i + d / 2], a[row * d + 2 * i + 1]);
    }
}

TEST(Rope, AnyEvenLastDimensionAndRank) {
  // MLA rotates a decoupled part whose size is not the head size, e.g. a
  // shared rope key (B, T, d_rope).
  auto rope = Make(RopeOptions::INTERLEAVED);
  Tensor x = RandomTensor({2, 3, 6}, 4);
  std::vector<float> y = rope->RotateQueryOrKey(Var(x), 10).value().ToVector();
  for (int row = 0; row < 6; ++row) {
    std::vector<double> want = Formula(x.data() + row * 6, 6, 10 + row % 3, true, 10000.0);
    for (int c = 0; c < 6; ++c) EXPECT_NEAR(y[row * 6 + c], want[c], 1e-6);
  }
}

TEST(Rope, OddHeadSizeIsRejected) {
  ModelDims dims = SmallDims();
  dims.d_model = 10, dims.num_heads = 2, dims.head_dim = 5;
  const auto* entry = *PositionEncodingRegistry().Get("rope");
  absl::Status status = entry->validate(*entry->default_options, dims);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("head size d_model / num_heads must be even (got 10 / 2 = 5)"),
            std::string::npos)
      << status;
  RopeOptions bad_base;
  bad_base.set_base(1.0f);
  EXPECT_NE(entry->validate(bad_base, SmallDims()).message().find("options.base must be > 1"),
            std::string::npos);
}

}  // namespace
}  // namespace tvlab
