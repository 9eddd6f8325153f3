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
// other completions of the pair (CoverOptions) for the legal one covering
// most; if none is legal, the pair is reported as illegal, not covered.
//
// Which completions are searched: exhaustive search asks the oracle about
// every completion of a pair that no legal cell holds, which with a dozen
// axes is most of the full product (1.8 million cells for the matrix of
// stop 37, about 200 s). The bounded search (the default) asks, level by
// level, and stops at the first level with a legal cell: 0 - the anchors:
// the defaults cell (every axis at its first value), the greedy completion
// and every cell chosen so far, each with the pair put in; 1 - every cell one
// free axis away from the defaults cell or the greedy completion; 2 - every
// cell two free axes away from them. So a pair reported illegal is one
// that no legal cell within those distances holds; with axes whose first
// value is the plain one ("off"), a refusal is a rule between a few values,
// and a legal completion, when one exists, is found near the defaults.
// Exhaustive search (max_changes = -1) proves a pair illegal;
// covering_array_test checks both on oracles with known answers.

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

struct CoverOptions {
  // The bounded search's largest distance (0, 1 or 2 levels as above), or
  // -1: search every completion.
  int max_changes = 2;
};

// `sizes[i]`: the number of values of axis i (each >= 1). `legal` is asked
// at most once per distinct cell.
CoveringArray PairwiseCover(const std::vector<int>& sizes,
                            const std::function<bool(const Cell&)>& legal,
                            const CoverOptions& options = {});

// The pairs of `cell` (every two axes).
std::vector<ValuePair> PairsOf(const Cell& cell);

}  // namespace tvlab

#endif  // TVLAB_TESTS_MATRIX_COVERING_ARRAY_H_
