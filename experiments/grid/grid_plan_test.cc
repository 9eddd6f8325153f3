// Resume logic from run directories alone: finished runs are skipped,
// failed ones kept unless retried, in-flight ones rerun (resumed when they
// have a checkpoint).

#include "experiments/grid/grid_plan.h"

#include <filesystem>
#include <fstream>

#include "experiments/grid/grid_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

ExpandedGrid TinyGrid(const std::string& values) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/plan";
  Write(dir + "/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  Write(dir + "/g.pbtxt", "base_spec: \"base.pbtxt\" output_dir: \"out\" seeds: [0, 1]\n"
                          "axis { field: \"model.num_layers\" values: [" + values + "] }\n");
  auto spec = ParseGridFile(dir + "/g.pbtxt");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, dir + "/g.pbtxt", dir);
  EXPECT_TRUE(grid.ok()) << grid.status();
  return *grid;
}

TEST(GridPlan, EverythingRunsTheFirstTime) {
  ExpandedGrid g = TinyGrid("\"1\"");
  std::filesystem::remove_all(g.output_dir);
  GridPlan plan = PlanGrid(g, false);
  EXPECT_EQ(plan.total, 2);
  EXPECT_EQ(plan.to_run.size(), 2u);
  EXPECT_FALSE(plan.to_run[0].resume);
  EXPECT_EQ(DescribePlan(plan), "2 runs: 0 finished (skipped), 2 to run");
}

TEST(GridPlan, FinishedSkippedFailedKeptInterruptedResumed) {
  ExpandedGrid g = TinyGrid("\"1\", \"2\"");
  std::filesystem::remove_all(g.output_dir);
  const auto& one = g.cells[0].runs;
  const auto& two = g.cells[1].runs;
  Write(one[0].run_dir + "/metrics.json", "{}");                 // finished
  Write(one[1].run_dir + "/failed.txt", "exit code 1\n");        // failed
  Write(two[0].run_dir + "/train_log.csv", "step,loss\n0,2.3\n");  // in flight, no checkpoint
  // In flight with a complete checkpoint (framework/train/checkpoint.h layout).
  Write(two[1].run_dir + "/checkpoints/step_2/state.json", "{}");
  Write(two[1].run_dir + "/checkpoints/step_2/model.safetensors", "");
  Write(two[1].run_dir + "/checkpoints/step_2/optimizer.safetensors", "");
  Write(two[1].run_dir + "/checkpoints/latest", "step_2\n");

  GridPlan plan = PlanGrid(g, false);
  EXPECT_EQ(plan.finished, 1);
  EXPECT_EQ(plan.failed_kept, 1);
  ASSERT_EQ(plan.to_run.size(), 2u);
  EXPECT_EQ(plan.to_run[0].run, &two[0]);
  EXPECT_FALSE(plan.to_run[0].resume);
  EXPECT_EQ(plan.to_run[1].run, &two[1]);
  EXPECT_TRUE(plan.to_run[1].resume);
  EXPECT_EQ(DescribePlan(plan),
            "4 runs: 1 finished (skipped), 1 failed earlier (kept; --retry_failed reruns it), 2 to run "
            "(1 resume from a checkpoint)");

  GridPlan retry = PlanGrid(g, true);
  ASSERT_EQ(retry.to_run.size(), 3u);
  EXPECT_EQ(retry.to_run[0].run, &one[1]);
  EXPECT_TRUE(retry.to_run[0].retry);
}

TEST(GridPlan, ExtendingAnAxisRunsOnlyTheNewCells) {
  ExpandedGrid before = TinyGrid("\"1\"");
  std::filesystem::remove_all(before.output_dir);
  for (const GridRun& r : before.cells[0].runs) Write(r.run_dir + "/metrics.json", "{}");
  ExpandedGrid after = TinyGrid("\"1\", \"3\"");
  GridPlan plan = PlanGrid(after, false);
  EXPECT_EQ(plan.finished, 2);
  ASSERT_EQ(plan.to_run.size(), 2u);
  EXPECT_EQ(plan.to_run[0].cell->label, "num_layers=3");
  EXPECT_EQ(plan.to_run[1].cell->label, "num_layers=3");
}

TEST(FormatDuration, MinutesAndHours) {
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
}

}  // namespace
}  // namespace tvlab
