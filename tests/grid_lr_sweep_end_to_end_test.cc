// A tiny learning-rate sweep through the real run binary: every variant is
// trained at every swept rate (the rate reaches the run's resolved spec),
// lr_sweep.md leads the printed report with each variant at the rate the
// run directories say is its best, and the sweep's runs count against
// max_runs before anything trains.

#include <filesystem>
#include <fstream>

#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/report/lr_sweep_report.h"
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
train { steps: 40 log_every: 20 }
eval { examples: 100 batch_size: 100 }
runtime { threads: 1 }
)pb";

const char kGrid[] = R"pb(base_spec: "base.pbtxt"
ablation { row { name: "no position" set: "model.position.plugin=none" } }
lr_sweep { field: "train.optimizer.adamw.lr" log_space { min: 1e-4 max: 1e-2 count: 3 } metric: "eval_loss" }
output_dir: "out"
)pb";

TEST(GridLrSweep, VariantsAtTheirOwnBestRate) {
  const std::string dir = TempDir() + "/lr_sweep";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/base.pbtxt") << kBase;
  std::ofstream(dir + "/grid.pbtxt") << kGrid;
  std::ofstream(dir + "/small.pbtxt") << kGrid << "max_runs: 5\n";

  RunResult refused = RunBinary(dir + "/small.pbtxt");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.output, HasSubstr("6 runs (ablation rows + baseline: 2 x lr_sweep values: 3)"));

  RunResult run = RunBinary(dir + "/grid.pbtxt --jobs 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("# grid: each variant at its own best train.optimizer.adamw.lr"));

  auto spec = ParseGridFile(dir + "/grid.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, dir + "/grid.pbtxt", dir);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_EQ(grid->cells.size(), 6u);
  EXPECT_EQ(grid->cells[5].label, "no position lr=0.01");
  EXPECT_THAT(ReadFile(grid->cells[5].runs[0].run_dir + "/spec.resolved.pbtxt"), HasSubstr("lr: 0.01"));

  GridResults results = CollectResults(*grid);
  std::vector<LrVariant> variants = LrSweepVariants(results);
  ASSERT_EQ(variants.size(), 2u);
  const std::string md = ReadFile(dir + "/out/lr_sweep.md");
  for (const LrVariant& v : variants) {
    ASSERT_GE(v.choice.best, 0) << v.label;
    EXPECT_THAT(md, HasSubstr("| " + v.label + " | " + v.points[v.choice.best].lr + " | ")) << md;
  }
  EXPECT_TRUE(fs::exists(dir + "/out/lr_sweep.svg"));
}

}  // namespace
}  // namespace tvlab
