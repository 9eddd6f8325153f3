// A tiny size ladder through the real run binary: 2 variants x 2 rungs x 2
// seeds of a few steps. Every run's numbers in ladder_runs.csv and every
// rung's mean and interval in the report are recomputed here from the run
// directories (train_log.csv's evaluations, metrics.json's tokens) and the
// cost model, with the targets chosen from the runs' own curves so that one
// report has every seed reaching the target and another none.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/report/ladder_report.h"
#include "framework/report/run_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const char kBase[] = R"pb(name: "tiny_sort"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 } } }
train { steps: 12 log_every: 4 eval_every: 4 batch_size: 16 optimizer { adamw { lr: 1e-2 } } }
eval { examples: 32 batch_size: 32 }
runtime { threads: 1 }
)pb";

std::string Grid(double target) {
  return absl::StrCat(R"pb(base_spec: "base.pbtxt"
ablation { row { name: "no position" set: "model.position.plugin=none" } }
seeds: [0, 1]
ladder { dial { depths: [1, 2] aspect_ratio: 8 head_dim: 4 ffn_multiplier: 2 } target_loss: )pb",
                      absl::StrFormat("%.17g", target), R"pb( }
output_dir: "out"
)pb");
}

// The evaluation curve of a run, read here without the report's code:
// (step, eval_loss) from train_log.csv rows whose eval_loss is not empty.
std::vector<std::pair<double, double>> EvalRows(const std::string& run_dir) {
  std::istringstream in(ReadFile(run_dir + "/train_log.csv"));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = absl::StrSplit(line, ',');
  const int eval = std::find(header.begin(), header.end(), "eval_loss") - header.begin();
  std::vector<std::pair<double, double>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = absl::StrSplit(line, ',');
    double step, loss;
    if (absl::SimpleAtod(cells[0], &step) && absl::SimpleAtod(cells[eval], &loss)) rows.emplace_back(step, loss);
  }
  return rows;
}

TEST(GridLadder, FlopsToTargetRecomputedFromTheRunDirectories) {
  const std::string dir = TempDir() + "/ladder";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/base.pbtxt") << kBase;
  std::ofstream(dir + "/grid.pbtxt") << Grid(2.0);
  RunResult run = RunBinary(dir + "/grid.pbtxt --jobs 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("# grid: size ladder (depth), target eval_loss 2"));

  auto spec = ParseGridFile(dir + "/grid.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, dir + "/grid.pbtxt", dir);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_EQ(grid->cells.size(), 4u);
  EXPECT_EQ(grid->cells[3].label, "no position depth=2");
  EXPECT_EQ(grid->cells[3].runs[0].spec.model().d_model(), 16);

  // The targets: one every run reaches (the worst of the runs' best
  // evaluations) and one none does (below every evaluation).
  double reach_all = -INFINITY, reach_none = INFINITY;
  for (const GridCell& c : grid->cells)
    for (const GridRun& r : c.runs) {
      const auto rows = EvalRows(r.run_dir);
      ASSERT_EQ(rows.size(), 3u) << r.run_dir;  // steps 3, 7, 11
      double best = INFINITY;
      for (const auto& [step, loss] : rows) best = std::min(best, loss), reach_none = std::min(reach_none, loss);
      reach_all = std::max(reach_all, best);
    }
  for (const double target : {reach_all, reach_none - 0.01}) {
    std::ofstream(dir + "/grid.pbtxt") << Grid(target);
    auto respec = ParseGridFile(dir + "/grid.pbtxt");
    ASSERT_TRUE(respec.ok());
    ASSERT_EQ(respec->ladder().target_loss(), target);  // written exactly
    auto regrid = ExpandGrid(*respec, dir + "/grid.pbtxt", dir);
    ASSERT_TRUE(regrid.ok()) << regrid.status();
    RunResult report = RunBinary(dir + "/grid.pbtxt --report_only");
    ASSERT_EQ(report.exit_code, 0) << report.output;
    const GridResults results = CollectResults(*regrid);
    const std::vector<LadderVariant> variants = LadderVariants(results);
    ASSERT_EQ(variants.size(), 2u);
    for (const LadderVariant& v : variants) {
      ASSERT_EQ(v.rungs.size(), 2u);
      EXPECT_THAT(ReadFile(dir + "/out/ladder.md"), HasSubstr("| " + v.label + " | train FLOPs C | 4 |  |  |  | no fit: too few points"));
      for (size_t k = 0; k < v.rungs.size(); ++k) {
        const LadderRungResult& r = v.rungs[k];
        const CellOutcome* cell = nullptr;
        for (const CellOutcome& c : results.cells)
          if (c.cell->label == v.label + " depth=" + r.rung) cell = &c;
        ASSERT_NE(cell, nullptr);
        auto cost = CostOfExperiment(cell->cell->runs[0].spec);
        ASSERT_TRUE(cost.ok()) << cost.status();
        std::vector<double> at;
        for (const GridRun& g : cell->cell->runs) {
          const std::string metrics = ReadFile(g.run_dir + "/metrics.json");
          const double tokens = JsonNumber(metrics, "tokens_trained");
          EXPECT_EQ(tokens, 12.0 * 16 * std::round(tokens / (12.0 * 16)));  // steps x batch x positions
          const double per_eval = tokens / 12 * cost->train_flops_per_token;
          const auto rows = EvalRows(g.run_dir);
          double prev_x = 0, prev_y = NAN;
          for (const auto& [step, loss] : rows) {
            const double x = (step + 1) * per_eval;
            if (loss <= target) {
              at.push_back(std::isnan(prev_y) ? x : prev_x + (prev_y - target) / (prev_y - loss) * (x - prev_x));
              break;
            }
            prev_x = x, prev_y = loss;
          }
        }
        if (target == reach_all) {
          ASSERT_TRUE(r.target_complete) << v.label << " " << r.rung;
          ASSERT_EQ(at.size(), 2u);
          EXPECT_NEAR(r.target_flops.mean, (at[0] + at[1]) / 2, 1e-9 * r.target_flops.mean);
          if (r.target_flops.defined) {
            // Two seeds: mean ± t_{1}(0.975) · |a - b| / 2, t_{1}(0.975) = 12.7062047...
            const double half = 12.706204736174707 * std::abs(at[0] - at[1]) / 2;
            EXPECT_NEAR(r.target_flops.high - r.target_flops.mean, half, 1e-6 * half);
          }
        } else {
          EXPECT_TRUE(at.empty());
          EXPECT_FALSE(r.target_complete);
          EXPECT_EQ(r.reached, 0);
          EXPECT_THAT(ReadFile(dir + "/out/ladder.md"), HasSubstr("not reached by 2 of 2 seed(s)"));
        }
      }
    }
    EXPECT_THAT(ReadFile(dir + "/out/ladder.md"), HasSubstr("no crossing computed: no fit for baseline"));
    const std::string runs_csv = ReadFile(dir + "/out/ladder_runs.csv");
    EXPECT_EQ(std::count(runs_csv.begin(), runs_csv.end(), '\n'), 9);  // header + 8 runs
    EXPECT_THAT(runs_csv, HasSubstr(target == reach_all ? ",reached" : ",not_reached,"));
    // Run directories relative to the results directory, as results.csv's.
    EXPECT_THAT(runs_csv, HasSubstr(",runs/"));
    EXPECT_THAT(runs_csv, Not(HasSubstr(dir + "/out/runs/")));
    EXPECT_TRUE(fs::exists(dir + "/out/ladder.svg"));
    EXPECT_TRUE(fs::exists(dir + "/out/ladder.csv"));
  }
}

}  // namespace
}  // namespace tvlab
