// The learning-rate sweep of a grid (lr_sweep.h): the runs it expands to and
// its validation errors.

#include "experiments/grid/expand/lr_sweep.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kBase[] = R"pb(name: "tiny"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" }
train { steps: 3 }
)pb";

std::string TempPath(const std::string& file) { return std::string(getenv("TEST_TMPDIR")) + "/" + file; }

absl::StatusOr<ExpandedGrid> Expand(const std::string& grid_text) {
  std::ofstream(TempPath("base.pbtxt")) << kBase;
  const std::string path = TempPath("sweep.pbtxt");
  std::ofstream(path) << "base_spec: \"base.pbtxt\"\n" << grid_text;
  auto spec = ParseGridFile(path);
  if (!spec.ok()) return spec.status();
  return ExpandGrid(*spec, path, TempPath("cwd"));
}

std::string Error(const std::string& grid_text) {
  auto g = Expand(grid_text);
  return g.ok() ? "(no error)" : std::string(g.status().message());
}

TEST(LrSweep, EveryVariantAtEveryValueAndSeed) {
  auto g = Expand(R"pb(
    axis { field: "model.position.plugin" values: ["sinusoidal", "rope"] label: "position" }
    baseline: ["position=sinusoidal"]
    seeds: [0, 1]
    lr_sweep { field: "train.optimizer.adamw.lr" values: [3e-3, 1e-3, 1e-2] })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->axis_labels, ElementsAre("position", "lr"));
  EXPECT_EQ(g->lr_column, 1);
  EXPECT_EQ(g->baseline, -1);
  EXPECT_EQ(g->lr_baseline, "position=sinusoidal");
  ASSERT_EQ(g->cells.size(), 6u);  // 2 variants x 3 values, values ascending
  EXPECT_EQ(g->cells[0].label, "position=sinusoidal lr=0.001");
  EXPECT_EQ(g->cells[5].label, "position=rope lr=0.01");
  EXPECT_THAT(g->cells[4].axis_values, ElementsAre("rope", "0.003"));
  EXPECT_EQ(g->cells[4].overrides.back(), "train.optimizer.adamw.lr=0.003");
  for (const GridCell& c : g->cells) {
    ASSERT_TRUE(c.valid()) << c.label << ": " << c.invalid_reason;
    ASSERT_EQ(c.runs.size(), 2u);
  }
  EXPECT_NE(g->cells[0].runs[0].key, g->cells[1].runs[0].key);  // the rate changes the run
}

TEST(LrSweep, PluginOptionsPathSweepsTheSameRate) {
  const std::string values = " values: [1e-3, 1e-2] }";
  auto old_spelling = Expand("lr_sweep { field: \"train.optimizer.adamw.lr\"" + values);
  auto plugin_path = Expand("lr_sweep { field: \"train.optimizer.options.lr\"" + values);
  ASSERT_TRUE(old_spelling.ok()) << old_spelling.status();
  ASSERT_TRUE(plugin_path.ok()) << plugin_path.status();
  ASSERT_EQ(plugin_path->cells.size(), 2u);
  EXPECT_EQ(plugin_path->cells[0].label, "base lr=0.001");
  for (int c = 0; c < 2; ++c)  // one resolved spec, so one run key, whichever path set the rate
    EXPECT_EQ(old_spelling->cells[c].runs[0].key, plugin_path->cells[c].runs[0].key);
  EXPECT_NE(plugin_path->cells[0].runs[0].key, plugin_path->cells[1].runs[0].key);
}

TEST(LrSweep, LogSpaceWithThreeSignificantDigits) {
  LrSweep sweep;
  sweep.mutable_log_space()->set_min(1e-4);
  sweep.mutable_log_space()->set_max(1e-2);
  sweep.mutable_log_space()->set_count(5);
  auto values = LrSweepValues(sweep);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, ElementsAre("0.0001", "0.000316", "0.001", "0.00316", "0.01"));
  EXPECT_EQ(LrSweepCount(sweep), 5);
}

TEST(LrSweep, AblationRowsAreVariants) {
  auto g = Expand(R"pb(
    ablation { row { name: "rope" set: ["model.position.plugin=rope"] } }
    lr_sweep { field: "train.optimizer.adamw.lr" log_space { min: 1e-3 max: 1e-2 count: 2 } })pb");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->cells.size(), 4u);
  EXPECT_EQ(g->cells[2].label, "rope lr=0.001");
  EXPECT_EQ(g->lr_baseline, "baseline");
}

TEST(LrSweep, MaxRunsCountsTheSweep) {
  EXPECT_THAT(Error(R"pb(max_runs: 10 seeds: [0, 1, 2]
    axis { field: "model.position.plugin" values: ["sinusoidal", "rope"] }
    lr_sweep { field: "train.optimizer.adamw.lr" values: [1e-3, 1e-2] })pb"),
              HasSubstr("12 runs (model.position.plugin: 2 x lr_sweep values: 2 x seeds: 3)"));
}

TEST(LrSweep, ValidationErrorsNameTheFieldAndTheFix) {
  const std::string axis = "axis { field: \"model.position.plugin\" values: [\"sinusoidal\", \"rope\"] }\n";
  EXPECT_THAT(Error(axis + "lr_sweep { values: [1e-3, 1e-2] }"), HasSubstr("lr_sweep.field is required"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3] }"),
              HasSubstr("at least 2 values"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, -1e-2] }"),
              HasSubstr("lr_sweep.values: -0.01 is not a positive learning rate"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] log_space { "
                           "min: 1e-4 max: 1e-2 count: 3 } }"),
              HasSubstr("either values or log_space"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" log_space { min: 1e-2 max: 1e-4 "
                           "count: 3 } }"),
              HasSubstr("0 < min < max"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.rate\" values: [1e-3, 1e-2] }"),
              HasSubstr("lr_sweep.field 'train.optimizer.adamw.rate'"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] "
                           "metric: \"final_train_loss\" }"),
              HasSubstr("'final_train_loss' is not a held-out metric"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] "
                           "metric: \"perplexity@x\" }"),
              HasSubstr("not a held-out metric"));
  EXPECT_THAT(Error("axis { field: \"train.optimizer.adamw.lr\" values: [\"1e-3\", \"1e-2\"] }\n"
                    "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] }"),
              HasSubstr("lr_sweep.field train.optimizer.adamw.lr is also an axis; remove it there"));
  EXPECT_THAT(Error(axis + "set: \"train.optimizer.adamw.lr=1e-3\"\n"
                           "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] }"),
              HasSubstr("is also in `set`"));
  EXPECT_THAT(Error("ablation { row { name: \"hi\" set: [\"train.optimizer.adamw.lr=1e-2\"] } }\n"
                    "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] }"),
              HasSubstr("is also set by ablation row 'hi'"));
  EXPECT_THAT(Error(axis + "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1.0001e-3] }"),
              HasSubstr("repeat one"));
  EXPECT_THAT(Error(axis + "seeds: [0, 1]\nhypothesis { name: \"h\" a: [\"position=rope\"] b: "
                           "[\"position=sinusoidal\"] smallest_effect: 0.1 }\n"
                           "lr_sweep { field: \"train.optimizer.adamw.lr\" values: [1e-3, 1e-2] }"),
              HasSubstr("lr_sweep with hypothesis or seeds_for_power in one grid is not supported yet"));
}

TEST(LrSweep, MetricDirection) {
  EXPECT_TRUE(*LrSweepLowerIsBetter("eval_loss"));
  EXPECT_TRUE(*LrSweepLowerIsBetter("perplexity@1024"));
  EXPECT_FALSE(*LrSweepLowerIsBetter("token_accuracy"));
  EXPECT_FALSE(LrSweepLowerIsBetter("parameters").ok());
}

}  // namespace
}  // namespace tvlab
