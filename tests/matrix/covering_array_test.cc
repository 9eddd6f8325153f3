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

// Rules of the matrix's kind: a value that needs others off ("a mixer takes
// no window, no sink, no rope; only decoder-only"). The bounded search finds
// the same cells legal and the same pairs illegal as the exhaustive one, in
// far fewer oracle calls.
TEST(PairwiseCover, BoundedSearchAgreesWithExhaustiveOnRulesBetweenFewValues) {
  const std::vector<int> sizes = {4, 5, 3, 2, 3, 2, 3};
  auto legal = [](const Cell& c) {
    if (c[0] == 3 && (c[1] >= 2 || c[3] != 0 || c[4] != 0 || c[2] != 1)) return false;
    if (c[5] == 1 && c[6] == 2) return false;
    return !(c[1] == 4 && c[2] == 0);
  };
  const CoveringArray bounded = PairwiseCover(sizes, legal);
  const CoveringArray exhaustive = PairwiseCover(sizes, legal, {/*max_changes=*/-1});
  ExpectCovers(sizes, legal, bounded);
  ExpectCovers(sizes, legal, exhaustive);
  std::set<ValuePair> a(bounded.illegal_pairs.begin(), bounded.illegal_pairs.end());
  std::set<ValuePair> b(exhaustive.illegal_pairs.begin(), exhaustive.illegal_pairs.end());
  EXPECT_EQ(a, b);
  // (0=3, 1=2..4), (0=3, 2=0 or 2), (0=3, 3=1), (0=3, 4=1 or 2), (5=1, 6=2), (1=4, 2=0)
  EXPECT_EQ(a.size(), 3u + 2u + 1u + 2u + 1u + 1u);
  EXPECT_LT(bounded.oracle_calls, exhaustive.oracle_calls);
}

// Whatever the oracle, the bounded search never claims more than the
// exhaustive one: its cells are legal, and every pair the exhaustive search
// finds illegal it reports illegal too (it may report more: pairs whose
// legal cells lie beyond its bound). Rules over two and three axes, some
// from a fixed pseudo-random table.
TEST(PairwiseCover, BoundedSearchClaimsNoMoreThanTheExhaustiveOne) {
  const std::vector<int> sizes = {3, 4, 3, 2, 3, 2};
  auto legal = [](const Cell& c) {
    const unsigned h1 = (c[0] * 7 + c[2] * 3 + c[4] * 11) % 13, h2 = (c[1] * 5 + c[3] * 2 + c[5]) % 7;
    return h1 != 3 && h2 != 4 && !(c[0] == 2 && c[1] == 3) && !(c[2] == 1 && c[4] == 2 && c[5] == 0);
  };
  const CoveringArray bounded = PairwiseCover(sizes, legal);
  const CoveringArray exhaustive = PairwiseCover(sizes, legal, {/*max_changes=*/-1});
  ExpectCovers(sizes, legal, exhaustive);
  for (const Cell& cell : bounded.cells) EXPECT_TRUE(legal(cell));
  std::set<ValuePair> a(bounded.illegal_pairs.begin(), bounded.illegal_pairs.end());
  for (const ValuePair& p : exhaustive.illegal_pairs) EXPECT_EQ(a.count(p), 1u);
  EXPECT_FALSE(exhaustive.illegal_pairs.empty());
}

TEST(PairwiseCover, IsDeterministic) {
  auto legal = [](const Cell& c) { return c[0] != c[1]; };
  const CoveringArray a = PairwiseCover({3, 3, 2}, legal), b = PairwiseCover({3, 3, 2}, legal);
  EXPECT_EQ(a.cells, b.cells);
  EXPECT_EQ(a.illegal_pairs.size(), 3u);  // (0, 0), (1, 1), (2, 2) of the first two axes
}

}  // namespace
}  // namespace tvlab
