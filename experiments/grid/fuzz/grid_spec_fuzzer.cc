// libFuzzer target for the grid spec's checks: any text is parsed as a
// GridSpec (text format, as ParseGridFile does), and a spec that parses goes
// through the size bound and the axis expansion (CheckGridSize, AxisCells:
// empty axes, duplicate values and labels, zip lengths, baselines) and the
// hypotheses' checks (ResolveHypotheses) and a size ladder's rungs
// (CheckLadder, LadderRungSize: the sizes each rung gives a variant) and
// report_probes (CheckReportProbes, on cells without runs). Any input
// must give a grid or a Status: a crash, a sanitizer report, a leak, an abort
// or a run past -timeout (an unbounded expansion) is a bug. Built and run by
// tools/fuzz.sh; the seed corpus is corpus/ next to this file.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/grid/expand/grid_axes.h"
#include "experiments/grid/expand/hypotheses.h"
#include "experiments/grid/expand/ladder_rungs.h"
#include "experiments/grid/expand/report_probes.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace {

class Quiet : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  google::protobuf::TextFormat::Parser parser;
  Quiet quiet;
  parser.RecordErrorsTo(&quiet);
  tvlab::GridSpec spec;
  if (!parser.ParseFromString(std::string(reinterpret_cast<const char*>(data), size), &spec)) return 0;
  // A raised max_runs is the user's to pay for; the fuzzer keeps the default
  // so that an expansion that ignores the bound shows up as a timeout.
  spec.set_max_runs(std::min<int64_t>(spec.max_runs(), 10000));
  if (!tvlab::CheckGridSize(spec).ok()) return 0;
  if (spec.has_ladder() && tvlab::CheckLadder(spec.ladder()).ok()) {
    // One name per rung, distinct; every rung a positive size that grows.
    const std::vector<std::string> names = tvlab::LadderRungNames(spec.ladder());
    if (static_cast<int>(names.size()) != tvlab::LadderRungCount(spec.ladder())) __builtin_trap();
    int64_t previous = 0;
    for (int i = 0; i < static_cast<int>(names.size()); ++i) {
      for (int64_t heads : {int64_t{0}, int64_t{3}}) {
        auto size = tvlab::LadderRungSize(spec.ladder(), i, heads, "v");
        if (!size.ok()) continue;
        if (size->d_model < 1 || size->num_layers < 1) __builtin_trap();
        if (size->num_heads > 0 && size->d_model % size->num_heads != 0) __builtin_trap();
        if (heads == 3 && size->d_model * size->num_layers < previous) __builtin_trap();
        if (heads == 3) previous = size->d_model * size->num_layers;
      }
    }
  }
  tvlab::ExpandedGrid grid;
  if (tvlab::AxisCells(spec, &grid).ok()) {
    // Every cell has one value per axis column, and the baseline is a cell.
    for (const tvlab::GridCell& cell : grid.cells)
      if (cell.axis_values.size() != grid.axis_labels.size()) __builtin_trap();
    if (grid.baseline >= static_cast<int>(grid.cells.size())) __builtin_trap();
    // Hypotheses select cells of this grid, or are a Status.
    grid.spec = spec;
    if (tvlab::ResolveHypotheses(&grid).ok()) {
      for (const tvlab::GridHypothesis& h : grid.hypotheses)
        if (h.cell_a < 0 || h.cell_b < 0 || h.cell_a >= static_cast<int>(grid.cells.size()) ||
            h.cell_b >= static_cast<int>(grid.cells.size()) || h.cell_a == h.cell_b)
          __builtin_trap();
    }
    // No cell has runs here (nothing was resolved), so a selection is an
    // error and no selection is fine: a Status either way, never a crash.
    if (tvlab::CheckReportProbes(grid).ok() != (spec.report_probes_size() == 0)) __builtin_trap();
  }
  return 0;
}
