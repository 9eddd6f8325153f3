#include "framework/core/rng.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Known-answer vectors from Random123's tests/kat_vectors ("philox4x32 10").
TEST(Philox4x32, MatchesRandom123KnownAnswers) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RngStream, DrawDependsOnlyOnKeyAndIndex) {
  RngStream a(7, RngPurpose::kDropout, 11);
  RngStream b(7, RngPurpose::kDropout, 11);
  // Draw out of order from b: same values.
  EXPECT_EQ(a.Word(5), b.Word(5));
  EXPECT_EQ(a.Word(0), b.Word(0));
  std::vector<uint32_t> block(10);
  a.Words(3, 10, block.data());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(block[i], b.Word(3 + i)) << i;
}

TEST(RngStream, DistinctKeysGiveDistinctStreams) {
  RngStream base(7, RngPurpose::kDropout, 11);
  EXPECT_NE(base.Word(0), RngStream(8, RngPurpose::kDropout, 11).Word(0));
  EXPECT_NE(base.Word(0), RngStream(7, RngPurpose::kInit, 11).Word(0));
  EXPECT_NE(base.Word(0), RngStream(7, RngPurpose::kDropout, 12).Word(0));
}

TEST(RngStream, MomentsOfUniformAndNormal) {
  RngStream s(1, RngPurpose::kInit, 0);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  std::vector<float> u(n);
  s.UniformFill(0, n, u.data());
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(u[i], 0.0f);
    ASSERT_LT(u[i], 1.0f);
    EXPECT_EQ(u[i], s.Uniform(i));
    su += u[i];
    float z = s.Normal(i);
    sn += z;
    sn2 += z * z;
  }
  EXPECT_NEAR(su / n, 0.5, 0.005);
  EXPECT_NEAR(sn / n, 0.0, 0.01);
  EXPECT_NEAR(sn2 / n, 1.0, 0.01);
  int counts[10] = {0};
  for (int i = 0; i < n; ++i) counts[s.UniformInt(i, 10)]++;
  for (int c : counts) EXPECT_NEAR(c, n / 10, n / 100);
}

}  // namespace
}  // namespace tvlab
