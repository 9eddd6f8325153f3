// The mixture's sample order: realised proportions match the weights (to
// within one sample at every block boundary, and within 0.5% over 100,003
// samples), each source's ranks are 0, 1, 2, ... with none skipped or
// repeated, the counts agree with the draws, and it is a pure function.

#include "plugins/task/token_store/mixture_order.h"

#include <cmath>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::vector<uint64_t> CountDraws(const MixtureOrder& order, uint64_t seed, uint64_t samples) {
  std::vector<uint64_t> counts(order.num_sources());
  for (uint64_t s = 0; s < samples; ++s) ++counts[order.At(seed, s).source];
  return counts;
}

TEST(MixtureOrder, RealisedProportionsMatchTheWeights) {
  const std::vector<double> weights = {3, 1, 0.5};
  const MixtureOrder order(weights);
  ASSERT_EQ(order.block_size(), MixtureOrder::kMinBlockSize);
  // At a block boundary: within one sample of N x share.
  const uint64_t boundary = 37 * order.block_size();
  std::vector<uint64_t> counts = CountDraws(order, 11, boundary);
  for (int k = 0; k < 3; ++k)
    EXPECT_LE(std::fabs(static_cast<double>(counts[k]) - boundary * weights[k] / 4.5), 1.0) << k;
  // Anywhere: the tolerance this test states, 0.5 percentage points.
  const uint64_t n = 100003;
  counts = CountDraws(order, 11, n);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(static_cast<double>(counts[k]) / n, weights[k] / 4.5, 0.005) << k;
}

TEST(MixtureOrder, EachSourceReadsItsRanksInBlocksWithoutGapOrRepeat) {
  const MixtureOrder order({1, 2, 5});
  const uint64_t n = 6 * order.block_size();
  std::vector<std::set<uint64_t>> ranks(3);
  for (uint64_t s = 0; s < n; ++s) {
    const MixtureOrder::Draw d = order.At(4, s);
    EXPECT_TRUE(ranks[d.source].insert(d.rank).second) << "sample " << s << " repeats a rank";
  }
  for (int k = 0; k < 3; ++k) {
    ASSERT_FALSE(ranks[k].empty());
    EXPECT_EQ(*ranks[k].rbegin() + 1, ranks[k].size()) << "source " << k << " skipped a rank";
  }
}

TEST(MixtureOrder, CountsAgreeWithTheDrawsAndSumToTheSamples) {
  const MixtureOrder order({0.2, 0.3, 0.5});
  for (uint64_t n : {0ull, 1ull, 1000ull, 1024ull, 5000ull, 10240ull}) {
    const std::vector<uint64_t> counts = order.SamplesPerSource(8, n);
    EXPECT_EQ(counts, CountDraws(order, 8, n)) << n;
  }
}

TEST(MixtureOrder, IsAPureFunctionOfSeedAndSample) {
  const MixtureOrder order({1, 1}), again({1, 1});
  int differ = 0;
  for (uint64_t s = 0; s < 2048; ++s) {
    EXPECT_EQ(order.At(3, s).source, again.At(3, s).source);
    EXPECT_EQ(order.At(3, s).rank, again.At(3, s).rank);
    differ += order.At(3, s).source != order.At(4, s).source;
  }
  EXPECT_GT(differ, 100);  // another seed, another order
}

TEST(MixtureOrder, OneSourceIsTheIdentityAndASmallShareStillGetsEveryBlock) {
  const MixtureOrder one({2.5});
  EXPECT_EQ(one.At(9, 12345).source, 0);
  EXPECT_EQ(one.At(9, 12345).rank, 12345u);
  const MixtureOrder small({1, 1e-5});
  EXPECT_GE(small.block_size(), 200000u);
  for (uint64_t blocks = 1; blocks <= 3; ++blocks) {
    const std::vector<uint64_t> counts = small.SamplesPerSource(1, blocks * small.block_size());
    EXPECT_NEAR(static_cast<double>(counts[1]), blocks * small.block_size() * (1e-5 / (1 + 1e-5)), 1.0);
    EXPECT_GE(counts[1], blocks);
  }
  EXPECT_EQ(SourceWindowSeed(77, 0), 77u);
  EXPECT_NE(SourceWindowSeed(77, 1), 77u);
}

}  // namespace
}  // namespace tvlab
