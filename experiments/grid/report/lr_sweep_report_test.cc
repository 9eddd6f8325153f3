// The report of a learning-rate sweep (lr_sweep_report.h): the choice per
// variant (best mean held-out metric, ties to the smaller rate, edge flag,
// incomplete rates not eligible) and lr_sweep.md from hand-written run
// directories.

#include "experiments/grid/report/lr_sweep_report.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "experiments/grid/report/results_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LrPoint Point(const std::string& lr, std::vector<double> values, int seeds) {
  LrPoint p;
  p.lr = lr, p.values = std::move(values), p.seeds = seeds;
  return p;
}

TEST(ChooseLr, BestMeanInsideTheRange) {
  LrChoice c = ChooseLr({Point("1e-3", {2.0, 2.2}, 2), Point("3e-3", {1.5, 1.7}, 2), Point("1e-2", {1.9, 1.9}, 2)},
                        /*lower_is_better=*/true);
  EXPECT_EQ(c.best, 1);
  EXPECT_FALSE(c.at_edge);
  EXPECT_FALSE(c.tie);
}

TEST(ChooseLr, EdgeOfTheRangeIsFlagged) {
  EXPECT_TRUE(ChooseLr({Point("1e-3", {1.0}, 1), Point("1e-2", {2.0}, 1)}, true).at_edge);  // smallest
  LrChoice high = ChooseLr({Point("1e-3", {0.5}, 1), Point("3e-3", {0.6}, 1), Point("1e-2", {0.9}, 1)}, false);
  EXPECT_EQ(high.best, 2);  // accuracy: higher is better, and the largest value wins
  EXPECT_TRUE(high.at_edge);
}

TEST(ChooseLr, TieGoesToTheSmallerRate) {
  LrChoice c = ChooseLr({Point("1e-3", {2.0}, 1), Point("3e-3", {1.0, 2.0}, 2), Point("1e-2", {1.5, 1.5}, 2)}, true);
  EXPECT_EQ(c.best, 1);
  EXPECT_TRUE(c.tie);
  EXPECT_FALSE(ChooseLr({Point("1e-3", {1.0}, 1), Point("3e-3", {1.5}, 1)}, true).tie);
}

TEST(ChooseLr, OnlyRatesWhoseEverySeedFinishedAreEligible) {
  // 1e-2 has the best value but one of its two seeds diverged (or is missing).
  LrChoice c = ChooseLr({Point("1e-3", {2.0, 2.0}, 2), Point("3e-3", {1.8, 1.8}, 2), Point("1e-2", {0.5}, 2)}, true);
  EXPECT_EQ(c.best, 1);
  EXPECT_EQ(ChooseLr({Point("1e-3", {}, 2), Point("1e-2", {1.0}, 2)}, true).best, -1);
}

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

void Finish(const GridRun& run, double eval_loss) {
  Write(run.run_dir + "/metrics.json",
        absl::StrCat("{\"token_accuracy\": 0.5, \"eval_loss\": ", eval_loss,
                     ", \"final_train_loss\": 1, \"tokens_per_second\": 1000, \"train_seconds\": 2.0, \"steps\": 3}"));
}

TEST(LrSweepReport, EachVariantAtItsOwnBestRate) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/lr";
  std::filesystem::remove_all(dir);
  Write(dir + "/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  Write(dir + "/g.pbtxt", R"pb(base_spec: "base.pbtxt" output_dir: "out" seeds: [0, 1]
    axis { field: "model.position.plugin" values: ["sinusoidal", "rope"] label: "position" }
    baseline: "position=sinusoidal"
    lr_sweep { field: "train.optimizer.adamw.lr" values: [1e-3, 3e-3, 1e-2] })pb");
  auto spec = ParseGridFile(dir + "/g.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, dir + "/g.pbtxt", dir);
  ASSERT_TRUE(grid.ok()) << grid.status();
  // sinusoidal: best at 3e-3 (inside); rope: best at 1e-2 (the edge).
  const double loss[6] = {2.0, 1.5, 1.8, 2.0, 1.6, 1.2};
  for (int c = 0; c < 6; ++c)
    for (const GridRun& r : grid->cells[c].runs) Finish(r, loss[c] + 0.01 * r.seed);
  GridResults results = CollectResults(*grid);
  std::vector<LrVariant> v = LrSweepVariants(results);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].label, "position=sinusoidal");
  EXPECT_EQ(v[0].points[v[0].choice.best].lr, "0.003");
  EXPECT_FALSE(v[0].choice.at_edge);
  EXPECT_EQ(v[1].points[v[1].choice.best].lr, "0.01");
  EXPECT_TRUE(v[1].choice.at_edge);
  const std::string md = LrSweepMarkdown(results, v);
  EXPECT_THAT(md, HasSubstr("| position=sinusoidal | 0.003 | 1.505 ± 0.0071 (2) | +0 |  |"));
  EXPECT_THAT(md, HasSubstr("| position=rope | 0.01 | 1.205 ± 0.0071 (2) | -0.3 | at the largest swept value: "
                            "the optimum may lie outside the range; extend the sweep |"));
  EXPECT_THAT(md, HasSubstr("| position=rope | 2.005 | 1.605 | **1.205** |"));
  EXPECT_THAT(md, Not(HasSubstr("tie:")));
  auto written = WriteReport(results);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(std::filesystem::exists(grid->results_dir + "/lr_sweep.md"));
  EXPECT_TRUE(std::filesystem::exists(grid->results_dir + "/lr_sweep.svg"));
}

}  // namespace
}  // namespace tvlab
