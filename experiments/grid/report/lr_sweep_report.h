#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_LR_SWEEP_REPORT_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_LR_SWEEP_REPORT_H_

// The report of a grid with lr_sweep (grid.proto's LrSweep): each variant's
// best learning rate, chosen on the held-out lr_sweep.metric, and the
// variants compared each at its own best rate.
//   lr_sweep.md   the comparison at the chosen rates (with the chosen rate
//                 and an edge flag), then the metric at every rate
//   lr_sweep.svg  the metric against the rate, one line per variant

#include <string>
#include <vector>

#include "experiments/grid/report/grid_results.h"

namespace tvlab {

// One swept value of one variant.
struct LrPoint {
  std::string lr;              // as swept ("0.001")
  std::vector<double> values;  // the metric of each finished, non-diverged seed
  int seeds = 0;               // runs planned at this value
  int diverged = 0;
  // Eligible: every planned seed finished without diverging.
  bool complete() const { return seeds > 0 && static_cast<int>(values.size()) == seeds; }
};

struct LrChoice {
  int best = -1;         // index into the points; -1 when no value is eligible
  bool at_edge = false;  // best is the smallest or the largest swept value
  bool tie = false;      // another eligible value had the same mean (the smaller won)
};

// The eligible point (complete()) with the best mean metric; points are in
// ascending lr, and a tie goes to the smaller lr.
LrChoice ChooseLr(const std::vector<LrPoint>& points, bool lower_is_better);

struct LrVariant {
  std::string label;                  // the cell label without its lr
  std::vector<const CellOutcome*> cells;  // one per swept value, ascending
  std::vector<LrPoint> points;        // parallel to cells
  LrChoice choice;
};

// The variants of a swept grid (cells that differ only in the swept value),
// in grid order, each with its choice. Empty without lr_sweep.
std::vector<LrVariant> LrSweepVariants(const GridResults& results);

std::string LrSweepMarkdown(const GridResults& results, const std::vector<LrVariant>& variants);
std::string LrSweepSvg(const GridResults& results, const std::vector<LrVariant>& variants);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_LR_SWEEP_REPORT_H_
