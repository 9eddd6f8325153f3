// A tiny one-factor-at-a-time grid through the real run binary: the
// significance columns appear with sane values, "no position" vs sinusoidal
// is marked significant, the same configuration under two sets of seeds is
// not, the bootstrap column appears from 5 seeds, and equal-budget columns
// (and an unmatchable budget) come out before anything trains.

#include <filesystem>
#include <fstream>

#include "absl/strings/str_split.h"
#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/results_table.h"
#include "experiments/grid/expand/grid_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Sorting 6 digits: at 300 steps sinusoidal positions reach ~0.45 token
// accuracy and no positions ~0.26 (an encoder without positions cannot tell
// where a digit goes).
const char kBase[] = R"pb(name: "tiny_sort"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 } } }
train { steps: 300 log_every: 100 }
eval { examples: 200 batch_size: 200 }
runtime { threads: 1 }
)pb";

std::string Grid(const std::string& seeds, const std::string& extra = "") {
  return "base_spec: \"base.pbtxt\"\n"
         "ablation { row { name: \"no position\" set: \"model.position.plugin=none\" } " + extra + "}\n"
         "seeds: [" + seeds + "]\noutput_dir: \"out\"\n";
}

class GridRigor : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("base.pbtxt", kBase);
  }
  void Write(const std::string& file, const std::string& text) { std::ofstream(dir_ + "/" + file) << text; }
  RunResult Run(const std::string& args) { return RunBinary(dir_ + "/" + args); }
  ExpandedGrid Expand(const std::string& file) {
    auto spec = ParseGridFile(dir_ + "/" + file);
    EXPECT_TRUE(spec.ok()) << spec.status();
    auto grid = ExpandGrid(*spec, dir_ + "/" + file, dir_);
    EXPECT_TRUE(grid.ok()) << grid.status();
    return *grid;
  }
  // The results.md row whose first cell is `name`.
  std::string Row(const std::string& md, const std::string& name) {
    for (absl::string_view line : absl::StrSplit(md, '\n'))
      if (line.rfind("| " + name + " ", 0) == 0) return std::string(line);
    return "(no row " + name + ")";
  }
  std::string dir_;
};

TEST_F(GridRigor, SignificanceColumnsOnRealRuns) {
  Write("grid.pbtxt", Grid("0, 1, 2"));
  RunResult first = Run("grid.pbtxt --jobs 2");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, Not(HasSubstr("fewer than 3")));
  std::string md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("| variant | seeds | **token_accuracy** | Δ | Δ 95% CI | p | p (Holm) | sequence_accuracy"));
  EXPECT_THAT(md, Not(HasSubstr("bootstrap CI")));  // 3 seeds
  EXPECT_THAT(Row(md, "no position"), HasSubstr(" \\* | ")) << md;

  // The same numbers, recomputed from the run directories: the CI brackets
  // the delta, excludes 0, and agrees with p < 0.05.
  ExpandedGrid grid = Expand("grid.pbtxt");
  GridResults results = CollectResults(grid);
  GridComparison cmp = CompareWithBaseline(results, "token_accuracy");
  ASSERT_TRUE(cmp.cells[1].has_value());
  const WelchResult& w = cmp.cells[1]->welch;
  ASSERT_TRUE(w.defined);
  EXPECT_LT(w.delta, -0.05);
  EXPECT_LT(w.ci_low, w.delta);
  EXPECT_LT(w.ci_high, 0);
  EXPECT_LT(w.p, 0.05);
  EXPECT_GT(w.p, 0);
  EXPECT_TRUE(cmp.cells[1]->significant);
  std::string csv = ReadFile(dir_ + "/out/significance.csv");
  EXPECT_THAT(csv, HasSubstr("no position,token_accuracy,3,3,"));

  // The same runs seen through a grid of two seeds: warned on stderr and in the table.
  Write("two.pbtxt", Grid("0, 1"));
  RunResult two = Run("two.pbtxt --report_only");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_THAT(two.output, HasSubstr("warning: cell 'no position' has 2 finished seeds (fewer than 3)"));
  EXPECT_THAT(two.output, HasSubstr("warning: cell 'baseline' has 2 finished seeds"));
  EXPECT_THAT(ReadFile(dir_ + "/out/results.md"), HasSubstr("**Warning:** 2 cells have fewer than 3 finished seeds"));

  // Three more seeds: only the new runs train, and the bootstrap column appears.
  Write("grid.pbtxt", Grid("0, 1, 2, 3, 4, 5"));
  RunResult second = Run("grid.pbtxt --jobs 2");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("12 runs: 6 finished (skipped), 6 to run"));
  md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("Δ bootstrap CI"));
  EXPECT_THAT(Row(md, "no position"), HasSubstr(" \\* | "));

  // Two cells that differ only in seed: the baseline's runs with seeds 0-2
  // against its runs with seeds 3-5, through the same comparison and table.
  ExpandedGrid six = Expand("grid.pbtxt");
  ExpandedGrid twins = six;
  twins.cells.resize(2);
  twins.cells[0] = six.cells[0];
  twins.cells[1] = six.cells[0];
  twins.cells[0].runs.assign(six.cells[0].runs.begin(), six.cells[0].runs.begin() + 3);
  twins.cells[1].runs.assign(six.cells[0].runs.begin() + 3, six.cells[0].runs.end());
  twins.cells[0].axis_values = {"seeds 0-2"};
  twins.cells[1].axis_values = {"seeds 3-5"};
  twins.cells[1].label = "seeds 3-5";
  twins.baseline = 0;
  GridResults twin_results = CollectResults(twins);
  GridComparison twin = CompareWithBaseline(twin_results, "token_accuracy");
  ASSERT_TRUE(twin.cells[1].has_value());
  EXPECT_TRUE(twin.cells[1]->welch.defined);
  EXPECT_GT(twin.cells[1]->welch.p, 0.05);
  EXPECT_FALSE(twin.cells[1]->significant);
  EXPECT_LT(twin.cells[1]->welch.ci_low, 0);
  EXPECT_GT(twin.cells[1]->welch.ci_high, 0);
  EXPECT_THAT(Row(ResultsMarkdown(twin_results), "seeds 3-5"), Not(HasSubstr("\\*")));
}

TEST_F(GridRigor, EqualBudgetColumnsAndUnmatchableBudgets) {
  // Matched before anything trains: the report alone shows the solved widths.
  Write("budget.pbtxt", Grid("0, 1, 2", "row { name: \"swiglu\" set: \"model.ffn.plugin=swiglu\" } ") +
                            "equal_budget { match: PARAMETERS field: \"model.d_ff\" tolerance: 0.02 }\n");
  RunResult report = Run("budget.pbtxt --report_only");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::string md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("| d_ff (solved) | budget Δ | notes |"));
  // GELU d_ff 32 with biases: SwiGLU's three matrices at d_ff 21 land within 2%.
  EXPECT_THAT(Row(md, "swiglu"), HasSubstr("| 21 | -0.23% |"));
  EXPECT_THAT(Row(md, "no position"), HasSubstr("| 32 | +0.00% |"));
  std::string csv = ReadFile(dir_ + "/out/results.csv");
  EXPECT_THAT(csv, HasSubstr(",error,solved_value,budget_deviation,diverged_at_step,diverged_loss\n"));
  EXPECT_THAT(csv, HasSubstr(",21,-0.00232"));
  // Unmatchable: d_ff cannot move the KV cache. Exit 2, nothing trained.
  Write("kv.pbtxt", Grid("0", "row { name: \"mqa\" set: [\"model.num_heads=4\", \"model.attention.layout=mqa\"] } ") +
                        "equal_budget { match: KV_CACHE_BYTES_PER_TOKEN field: \"model.d_ff\" max_value: 1024 }\n");
  RunResult kv = Run("kv.pbtxt");
  EXPECT_EQ(kv.exit_code, 2) << kv.output;
  EXPECT_THAT(kv.output, HasSubstr("cell 'mqa': cannot match the baseline's KV-cache bytes/token"));
  EXPECT_FALSE(fs::exists(dir_ + "/out/runs"));
}

}  // namespace
}  // namespace tvlab
