#ifndef TVLAB_TESTS_MATRIX_COVERING_ARRAY_H_
#define TVLAB_TESTS_MATRIX_COVERING_ARRAY_H_

// A pairwise covering array under a legality oracle: a set of cells (one
// value per axis) such that every pair of values (axis a = x, axis b = y)
// that some legal cell holds is held by at least one chosen cell. The
// number of cells grows with the product of the two largest axes, not with
// the product of all of them.
//
// Greedy and deterministic (the same axes give the same cells in every
// process, so each Bazel shard can compute the array and run its share):
// take the first uncovered pair, complete it axis by axis with the value
// that covers most uncovered pairs; if the oracle refuses that cell, search
// every completion of the pair for the legal one covering most; if none is
// legal, the pair is illegal (reported, not covered).

#include <cstdint>
#include <functional>
#include <vector>

namespace tvlab {

// A cell: for each axis, the index of its value.
using Cell = std::vector<int>;

struct ValuePair {
  int axis_a, value_a, axis_b, value_b;  // axis_a < axis_b
  bool operator<(const ValuePair& o) const;
  bool operator==(const ValuePair& o) const;
};

struct CoveringArray {
  std::vector<Cell> cells;
  std::vector<ValuePair> illegal_pairs;  // held by no legal cell
  int64_t cells_refused = 0;             // distinct cells the oracle refused
  int64_t oracle_calls = 0;              // distinct cells asked about
};

// `sizes[i]`: the number of values of axis i (each >= 1). `legal` is asked
// at most once per distinct cell.
CoveringArray PairwiseCover(const std::vector<int>& sizes,
                            const std::function<bool(const Cell&)>& legal);

// The pairs of `cell` (every two axes).
std::vector<ValuePair> PairsOf(const Cell& cell);

}  // namespace tvlab

#endif  // TVLAB_TESTS_MATRIX_COVERING_ARRAY_H_
