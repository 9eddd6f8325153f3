#include "tests/matrix/covering_array.h"

#include <map>
#include <set>
#include <tuple>

namespace tvlab {

bool ValuePair::operator<(const ValuePair& o) const {
  return std::tie(axis_a, value_a, axis_b, value_b) <
         std::tie(o.axis_a, o.value_a, o.axis_b, o.value_b);
}

bool ValuePair::operator==(const ValuePair& o) const { return !(*this < o) && !(o < *this); }

std::vector<ValuePair> PairsOf(const Cell& cell) {
  std::vector<ValuePair> pairs;
  for (int a = 0; a < static_cast<int>(cell.size()); ++a)
    for (int b = a + 1; b < static_cast<int>(cell.size()); ++b)
      pairs.push_back({a, cell[a], b, cell[b]});
  return pairs;
}

namespace {

class Cover {
 public:
  Cover(const std::vector<int>& sizes, const std::function<bool(const Cell&)>& legal,
        const CoverOptions& options)
      : sizes_(sizes), legal_(legal), options_(options) {
    const int n = static_cast<int>(sizes.size());
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        for (int x = 0; x < sizes[a]; ++x)
          for (int y = 0; y < sizes[b]; ++y) uncovered_.insert({a, x, b, y});
  }

  CoveringArray Run() {
    while (!uncovered_.empty()) {
      const ValuePair seed = *uncovered_.begin();
      Cell cell = GreedyCompletion(seed);
      if (!Legal(cell))
        cell = options_.max_changes < 0 ? BestLegalCompletion(seed) : NearestLegalCompletion(seed, cell);
      if (cell.empty()) {
        result_.illegal_pairs.push_back(seed);
        uncovered_.erase(seed);
        continue;
      }
      for (const ValuePair& p : PairsOf(cell)) uncovered_.erase(p);
      result_.cells.push_back(cell);
    }
    return result_;
  }

 private:
  bool Legal(const Cell& cell) {
    auto [it, inserted] = asked_.emplace(cell, false);
    if (inserted) {
      it->second = legal_(cell);
      ++result_.oracle_calls;
      if (!it->second) ++result_.cells_refused;
    }
    return it->second;
  }

  int NewPairs(const Cell& cell) const {
    int n = 0;
    for (const ValuePair& p : PairsOf(cell)) n += uncovered_.count(p) > 0;
    return n;
  }

  // The seed's two values, then each other axis in order the value that
  // covers most uncovered pairs with the axes set so far (first on ties).
  Cell GreedyCompletion(const ValuePair& seed) const {
    const int n = static_cast<int>(sizes_.size());
    Cell cell(n, -1);
    cell[seed.axis_a] = seed.value_a;
    cell[seed.axis_b] = seed.value_b;
    for (int axis = 0; axis < n; ++axis) {
      if (cell[axis] >= 0) continue;
      int best = 0, best_gain = -1;
      for (int v = 0; v < sizes_[axis]; ++v) {
        int gain = 0;
        for (int other = 0; other < n; ++other) {
          if (other == axis || cell[other] < 0) continue;
          const ValuePair p = other < axis ? ValuePair{other, cell[other], axis, v}
                                           : ValuePair{axis, v, other, cell[other]};
          gain += uncovered_.count(p) > 0;
        }
        if (gain > best_gain) best = v, best_gain = gain;
      }
      cell[axis] = best;
    }
    return cell;
  }

  // Every completion of the seed, in order; the legal one covering most
  // uncovered pairs, or empty when none is legal.
  Cell BestLegalCompletion(const ValuePair& seed) {
    const int n = static_cast<int>(sizes_.size());
    Cell cell(n, 0), best;
    cell[seed.axis_a] = seed.value_a;
    cell[seed.axis_b] = seed.value_b;
    int best_gain = -1;
    while (true) {
      if (Legal(cell)) {
        const int gain = NewPairs(cell);
        if (gain > best_gain) best = cell, best_gain = gain;
      }
      int axis = n - 1;  // odometer over the axes the seed leaves free
      for (; axis >= 0; --axis) {
        if (axis == seed.axis_a || axis == seed.axis_b) continue;
        if (++cell[axis] < sizes_[axis]) break;
        cell[axis] = 0;
      }
      if (axis < 0) return best;
    }
  }

  // The bounded search (covering_array.h): level 0 the anchors, level k the
  // cells k free axes away from the first two anchors; the legal cell
  // covering most uncovered pairs at the first level that has one, or empty.
  Cell NearestLegalCompletion(const ValuePair& seed, const Cell& greedy) {
    const int n = static_cast<int>(sizes_.size());
    std::vector<Cell> anchors = {WithPair(Cell(n, 0), seed), greedy};
    for (const Cell& chosen : result_.cells) anchors.push_back(WithPair(chosen, seed));
    Cell best;
    int best_gain = -1;
    auto consider = [&](const Cell& cell) {
      if (!Legal(cell)) return;
      const int gain = NewPairs(cell);
      if (gain > best_gain) best = cell, best_gain = gain;
    };
    for (const Cell& anchor : anchors) consider(anchor);
    for (int changes = 1; best.empty() && changes <= options_.max_changes; ++changes)
      for (int a = 0; a < 2; ++a) Vary(anchors[a], seed, 0, changes, consider);
    return best;
  }

  static Cell WithPair(Cell cell, const ValuePair& pair) {
    cell[pair.axis_a] = pair.value_a;
    cell[pair.axis_b] = pair.value_b;
    return cell;
  }

  // Calls f on every cell that differs from `cell` in exactly `changes` of
  // the axes from `first_axis` on that the seed leaves free.
  template <typename F>
  void Vary(Cell cell, const ValuePair& seed, int first_axis, int changes, F& f) const {
    if (changes == 0) return f(cell);
    for (int axis = first_axis; axis < static_cast<int>(sizes_.size()); ++axis) {
      if (axis == seed.axis_a || axis == seed.axis_b) continue;
      const int original = cell[axis];
      for (int v = 0; v < sizes_[axis]; ++v) {
        if (v == original) continue;
        cell[axis] = v;
        Vary(cell, seed, axis + 1, changes - 1, f);
      }
      cell[axis] = original;
    }
  }

  std::vector<int> sizes_;
  std::function<bool(const Cell&)> legal_;
  CoverOptions options_;
  std::set<ValuePair> uncovered_;
  std::map<Cell, bool> asked_;
  CoveringArray result_;
};

}  // namespace

CoveringArray PairwiseCover(const std::vector<int>& sizes,
                            const std::function<bool(const Cell&)>& legal,
                            const CoverOptions& options) {
  return Cover(sizes, legal, options).Run();
}

}  // namespace tvlab
