// seeds_for_power through the real run binary: a pilot of 2 seeds per cell
// (paired seeds here differ by ~0.001 token accuracy, so a smallest effect of
// 0.0015 asks for more),
// then as many seeds as the pilot's variance asks for (recomputed here from
// the pilot's run directories), the hypotheses section in results.md and
// hypotheses.csv, and the max_runs error when the declared effect is too
// small for the bound.

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/report/seeds_for_power.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char kBase[] = R"pb(name: "tiny_sort"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 } } }
train { steps: 60 log_every: 30 }
eval { examples: 100 batch_size: 100 }
runtime { threads: 1 }
)pb";

// Sinusoidal (baseline) against no positions; `tail` adds seeds or
// seeds_for_power and max_runs.
// `rows` adds ablation rows that no hypothesis names.
std::string Grid(double smallest_effect, const std::string& tail, const std::string& rows = "") {
  return absl::StrCat(
      "base_spec: \"base.pbtxt\"\n"
      "ablation { row { name: \"none\" set: \"model.position.plugin=none\" } ", rows, "}\n"
      "hypothesis { name: \"positions_help\" a: \"variant=baseline\" b: \"variant=none\" direction: A_GREATER "
      "one_sided: true smallest_effect: ", smallest_effect, " test: PAIRED_BY_SEED }\n"
      "output_dir: \"out\"\n", tail);
}

class GridPower : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("base.pbtxt", kBase);
  }
  void Write(const std::string& file, const std::string& text) { std::ofstream(dir_ + "/" + file) << text; }
  ExpandedGrid Expand(const std::string& file) {
    auto spec = ParseGridFile(dir_ + "/" + file);
    EXPECT_TRUE(spec.ok()) << spec.status();
    auto grid = ExpandGrid(*spec, dir_ + "/" + file, dir_);
    EXPECT_TRUE(grid.ok()) << grid.status();
    return *grid;
  }
  std::string dir_;
};

TEST_F(GridPower, PilotThenTheSeedsItsVarianceAsksFor) {
  Write("grid.pbtxt", Grid(0.0015, "seeds_for_power { pilot_seeds: 2 }\nmax_runs: 24\n"));
  RunResult run = RunBinary(dir_ + "/grid.pbtxt --jobs 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("seeds_for_power: running the pilot (2 seeds per cell) first"));
  // The pilot alone (same run keys: seeds 0 and 1), planned here.
  Write("pilot.pbtxt", Grid(0.0015, "seeds: [0, 1]\n"));
  const ExpandedGrid pilot = Expand("pilot.pbtxt");
  SeedsForPower options;
  options.set_pilot_seeds(2);
  auto plan = PlanSeedsForPower(CollectResults(pilot), options, 24);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_GT(plan->seeds_per_cell, 2);  // the pilot alone is not enough: the second stage ran
  EXPECT_THAT(run.output, HasSubstr(absl::StrCat("seeds_for_power: ", plan->seeds_per_cell, " seeds per cell")));
  // Every seed up to that number finished in both cells, none beyond.
  for (int seed = 0; seed <= plan->seeds_per_cell; ++seed) {
    Write("one.pbtxt", Grid(0.0015, absl::StrCat("seeds: [", seed, "]\n")));
    const ExpandedGrid one = Expand("one.pbtxt");
    for (const GridCell& cell : one.cells) {
      EXPECT_EQ(fs::exists(cell.runs[0].run_dir + "/metrics.json"), seed < plan->seeds_per_cell)
          << cell.label << " seed " << seed;
    }
  }
  const std::string md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("## Pre-registered hypotheses"));
  EXPECT_THAT(md, HasSubstr(absl::StrCat("| positions_help | primary | baseline | none | token_accuracy | "
                                         "paired by seed | A > B, one-sided | ", plan->seeds_per_cell, " / ",
                                         plan->seeds_per_cell, " |")));
  EXPECT_THAT(ReadFile(dir_ + "/out/hypotheses.csv"), HasSubstr("\npositions_help,primary,token_accuracy,"));
}

// cells: HYPOTHESIS_CELLS with max_seeds: the named cells (baseline, none)
// get the planned seeds, at most 4; 'learned' keeps the pilot's 2.
TEST_F(GridPower, HypothesisCellsGetThePlannedSeedsAndTheOthersKeepThePilot) {
  const std::string learned = "row { name: \"learned\" set: \"model.position.plugin=learned\" } ";
  Write("grid.pbtxt", Grid(0.0015, "seeds_for_power { pilot_seeds: 2 cells: HYPOTHESIS_CELLS max_seeds: 4 }\n"
                                   "max_runs: 12\n", learned));
  RunResult run = RunBinary(dir_ + "/grid.pbtxt --jobs 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  Write("pilot.pbtxt", Grid(0.0015, "seeds: [0, 1]\n", learned));
  const ExpandedGrid pilot = Expand("pilot.pbtxt");
  SeedsForPower options;
  options.set_pilot_seeds(2);
  options.set_cells(SeedsForPower::HYPOTHESIS_CELLS);
  options.set_max_seeds(4);
  auto plan = PlanSeedsForPower(CollectResults(pilot), options, 12);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GT(plan->seeds_per_cell, 2);
  EXPECT_THAT(run.output, HasSubstr(absl::StrCat("seeds_for_power: ", plan->seeds_per_cell,
                                                 " seeds per cell in the 2 cells the hypotheses name; 2 (the "
                                                 "pilot's) in the others")));
  for (int seed = 0; seed <= 4; ++seed) {
    Write("one.pbtxt", Grid(0.0015, absl::StrCat("seeds: [", seed, "]\n"), learned));
    const ExpandedGrid one = Expand("one.pbtxt");
    for (const GridCell& cell : one.cells) {
      const int seeds = cell.label == "learned" ? 2 : plan->seeds_per_cell;
      EXPECT_EQ(fs::exists(cell.runs[0].run_dir + "/metrics.json"), seed < seeds) << cell.label << " seed " << seed;
    }
  }
  // --report_only sees the same runs (the same grid, from the same pilot).
  RunResult report = RunBinary(dir_ + "/grid.pbtxt --report_only");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_THAT(report.output, HasSubstr(absl::StrCat(2 * plan->seeds_per_cell + 2, " runs: seeds_for_power's other "
                                                    "cells keep the pilot's seeds")));
}

TEST_F(GridPower, TooSmallAnEffectForMaxRunsIsAnError) {
  Write("grid.pbtxt", Grid(1e-5, "seeds_for_power { pilot_seeds: 2 }\nmax_runs: 10\n"));
  RunResult run = RunBinary(dir_ + "/grid.pbtxt --jobs 2");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("seeds_for_power: hypothesis 'positions_help': smallest_effect 1e-05"));
  EXPECT_THAT(run.output, HasSubstr("exceed max_runs 10; raise max_runs, declare a larger smallest_effect, or cap "
                                    "the seeds with max_seeds"));
}

TEST_F(GridPower, SeedsAndSeedsForPowerExcludeEachOther) {
  Write("grid.pbtxt", Grid(0.0015, "seeds: [0, 1]\nseeds_for_power { }\n"));
  RunResult run = RunBinary(dir_ + "/grid.pbtxt");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("grid.pbtxt: seeds_for_power: leave `seeds` empty"));
}

}  // namespace
}  // namespace tvlab
