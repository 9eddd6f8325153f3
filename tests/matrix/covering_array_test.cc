// The covering array's contract: every legal pair covered, only legal cells
// chosen, a pair no legal cell holds reported as illegal, and far fewer
// cells than the full product.

#include "tests/matrix/covering_array.h"

#include <set>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

// Every pair of `sizes` that `legal` allows in some full cell.
std::set<ValuePair> LegalPairs(const std::vector<int>& sizes,
                               const std::function<bool(const Cell&)>& legal) {
  std::set<ValuePair> pairs;
  Cell cell(sizes.size(), 0);
  while (true) {
    if (legal(cell))
      for (const ValuePair& p : PairsOf(cell)) pairs.insert(p);
    int axis = static_cast<int>(sizes.size()) - 1;
    for (; axis >= 0; --axis) {
      if (++cell[axis] < sizes[axis]) break;
      cell[axis] = 0;
    }
    if (axis < 0) return pairs;
  }
}

void ExpectCovers(const std::vector<int>& sizes, const std::function<bool(const Cell&)>& legal,
                  const CoveringArray& array) {
  std::set<ValuePair> covered;
  for (const Cell& cell : array.cells) {
    EXPECT_TRUE(legal(cell)) << "an illegal cell was chosen";
    for (const ValuePair& p : PairsOf(cell)) covered.insert(p);
  }
  EXPECT_EQ(covered, LegalPairs(sizes, legal));
  for (const ValuePair& p : array.illegal_pairs) EXPECT_EQ(covered.count(p), 0u);
}

TEST(PairwiseCover, CoversEveryPairWithFewCells) {
  const std::vector<int> sizes = {3, 6, 5, 3, 2, 2, 2};
  auto all = [](const Cell&) { return true; };
  CoveringArray array = PairwiseCover(sizes, all);
  ExpectCovers(sizes, all, array);
  EXPECT_TRUE(array.illegal_pairs.empty());
  EXPECT_GE(array.cells.size(), 30u);  // 6 x 5 pairs of the two largest axes
  EXPECT_LE(array.cells.size(), 45u) << "the full product has 2160";
}

TEST(PairwiseCover, SkipsWhatTheOracleRefusesAndReportsPairsNoLegalCellHolds) {
  const std::vector<int> sizes = {3, 5, 5, 3};
  // (axis 0 = 2, axis 1 = 4) is illegal everywhere; (axis 0 = 1, axis 2 = 0)
  // only with axis 3 = 0, so it is still covered.
  auto legal = [](const Cell& c) {
    if (c[0] == 2 && c[1] == 4) return false;
    return !(c[0] == 1 && c[2] == 0 && c[3] == 0);
  };
  CoveringArray array = PairwiseCover(sizes, legal);
  ExpectCovers(sizes, legal, array);
  ASSERT_EQ(array.illegal_pairs.size(), 1u);
  EXPECT_EQ(array.illegal_pairs[0].axis_a, 0);
  EXPECT_EQ(array.illegal_pairs[0].value_a, 2);
  EXPECT_EQ(array.illegal_pairs[0].axis_b, 1);
  EXPECT_EQ(array.illegal_pairs[0].value_b, 4);
  EXPECT_GT(array.cells_refused, 0);
  EXPECT_LE(array.oracle_calls, 3 * 5 * 5 * 3);
}

TEST(PairwiseCover, IsDeterministic) {
  auto legal = [](const Cell& c) { return c[0] != c[1]; };
  const CoveringArray a = PairwiseCover({3, 3, 2}, legal), b = PairwiseCover({3, 3, 2}, legal);
  EXPECT_EQ(a.cells, b.cells);
  EXPECT_EQ(a.illegal_pairs.size(), 3u);  // (0, 0), (1, 1), (2, 2) of the first two axes
}

}  // namespace
}  // namespace tvlab
