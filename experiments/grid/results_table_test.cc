// The results table from run directories alone: seed statistics, deltas
// against the baseline, failed/missing/invalid cells, and the files.

#include "experiments/grid/results_table.h"

#include <filesystem>
#include <fstream>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Tmp() { return getenv("TEST_TMPDIR"); }

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

void FinishRun(const GridRun& run, double token_accuracy, double final_loss) {
  Write(run.run_dir + "/metrics.json",
        absl::StrCat("{\"token_accuracy\": ", token_accuracy, ", \"sequence_accuracy\": 0.5, \"eval_loss\": 1.0, ",
                     "\"final_train_loss\": ", final_loss, ", ",
                     "\"tokens_per_second\": 1000, \"train_seconds\": 2.0, \"steps\": 3, \"a_future_field\": 1}"));
  Write(run.run_dir + "/train_log.csv",
        absl::StrCat("step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec\n0,2.3,0.001,1,1,1\n2,", final_loss,
                     ",0.001,1,1,1\n"));
}

class ResultsTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write(Tmp() + "/rt/base.pbtxt", R"pb(name: "tiny"
      model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
      task { plugin: "sort_digits" } train { steps: 3 })pb");
    const std::string path = Tmp() + "/rt/g.pbtxt";
    Write(path, R"pb(base_spec: "base.pbtxt"
      axis { field: "model.position.plugin" values: ["none", "sinusoidal", "bogus"] label: "position" }
      seeds: [0, 1, 2]
      baseline: "position=sinusoidal"
      invalid_cells: SKIP
      output_dir: "out")pb");
    auto spec = ParseGridFile(path);
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto grid = ExpandGrid(*spec, path, Tmp());
    ASSERT_TRUE(grid.ok()) << grid.status();
    grid_ = *std::move(grid);
    const auto& none = grid_.cells[0].runs;
    const auto& sin = grid_.cells[1].runs;
    FinishRun(none[0], 0.30, 1.7), FinishRun(none[1], 0.31, 1.7), FinishRun(none[2], 0.32, 1.7);
    FinishRun(sin[0], 0.97, 0.1), FinishRun(sin[1], 0.99, 0.1);
    Write(sin[2].run_dir + "/failed.txt", "exit code 1\nerror: training loss became nan at step 2\n");
  }
  ExpandedGrid grid_;
};

TEST_F(ResultsTableTest, CollectsStatesFromTheRunDirectories) {
  GridResults r = CollectResults(grid_);
  EXPECT_EQ(r.runs(RunState::kFinished), 5);
  EXPECT_EQ(r.runs(RunState::kFailed), 1);
  EXPECT_EQ(r.runs(RunState::kNotRun), 0);
  EXPECT_EQ(r.cells[1].runs[2].error, "exit code 1\nerror: training loss became nan at step 2\n");
  ASSERT_TRUE(r.cells[0].cost.has_value());
  EXPECT_FALSE(r.cells[2].cost.has_value());  // invalid cell: nothing to build
  EXPECT_EQ(r.cells[0].runs[0].loss_curve.size(), 2u);
}

TEST_F(ResultsTableTest, MarkdownHasMeanStdDeltaAndCosts) {
  std::string md = ResultsMarkdown(CollectResults(grid_));
  // none: 0.30, 0.31, 0.32; sinusoidal: 0.97, 0.99 (seed 2 failed).
  EXPECT_THAT(md, HasSubstr("| none | 3 | 0.310 ± 0.010 | -0.670 | 0.500 ± 0.000 | 0.000 |"));
  EXPECT_THAT(md, HasSubstr("| sinusoidal (baseline) | 2/3 | 0.980 ± 0.014 |  |"));
  EXPECT_THAT(md, HasSubstr("seed 2 failed: training loss became nan at step 2"));
  EXPECT_THAT(md, HasSubstr("| bogus | – |"));
  EXPECT_THAT(md, HasSubstr("invalid: model.position.plugin: unknown position encoding plugin 'bogus'"));
  EXPECT_THAT(md, HasSubstr("3 cells (1 invalid), 6 runs: 5 finished, 1 failed, 0 not run."));
  EXPECT_THAT(md, HasSubstr("baseline **position=sinusoidal**"));
  // The none row: tokens/s and training seconds are seed means.
  EXPECT_THAT(md, HasSubstr("| 1k | 2.0 |"));
}

// A metric a run's task does not record is absent from its metrics.json,
// and a table of it shows nothing for that run rather than a 0. Older files
// that wrote 0 for it still read, as that 0.
TEST_F(ResultsTableTest, AbsentMetricsAreEmptyNotZero) {
  Write(grid_.cells[0].runs[0].run_dir + "/metrics.json",
        "{\"token_accuracy\": 0.3, \"bleu\": 0.25}");
  Write(grid_.cells[0].runs[1].run_dir + "/metrics.json",
        "{\"token_accuracy\": 0.3, \"exact_match\": 0, \"bleu\": 0}");  // an old file
  GridResults r = CollectResults(grid_);
  EXPECT_EQ(r.cells[0].Values("bleu"), (std::vector<double>{0.25, 0.0}));
  EXPECT_EQ(r.cells[0].Values("exact_match"), (std::vector<double>{0.0}));
  auto absent = MetricValue(r.cells[0].runs[0].metrics, "exact_match");
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(absent.status().message()), HasSubstr("absent from this run"));
  EXPECT_DOUBLE_EQ(*MetricValue(r.cells[0].runs[2].metrics, "token_accuracy"), 0.32);
  EXPECT_TRUE(r.cells[1].Values("bleu").empty());  // FinishRun writes no bleu
  std::string md = ResultsMarkdown(r);  // does not fail on the absent values
  EXPECT_THAT(md, HasSubstr("| none | 3 |"));
}

TEST_F(ResultsTableTest, CsvHasOneRowPerCellAndSeed) {
  std::string csv = ResultsCsv(CollectResults(grid_));
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u + 3 + 3 + 1);
  EXPECT_EQ(lines[0].rfind("cell,position,seed,state,baseline,token_accuracy,", 0), 0u);
  EXPECT_THAT(lines[1], HasSubstr("position=none,none,0,finished,false,0.3,0.5,1,1.7,1000,2,3,"));
  EXPECT_THAT(lines[6], HasSubstr("position=sinusoidal,sinusoidal,2,failed,true,,,"));
  EXPECT_THAT(lines[6], HasSubstr(",exit code 1; error: training loss became nan at step 2"));
  EXPECT_THAT(csv, HasSubstr("position=bogus,bogus,,invalid,false,"));
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  EXPECT_EQ(std::count(lines[1].begin(), lines[1].end(), ','), columns);
}

TEST_F(ResultsTableTest, PlotsShowEveryCellWithResults) {
  GridResults r = CollectResults(grid_);
  std::string loss = LossCurvesSvg(r);
  EXPECT_THAT(loss, HasSubstr(">position=none</text>"));
  EXPECT_THAT(loss, HasSubstr(">position=sinusoidal</text>"));
  EXPECT_THAT(loss, Not(HasSubstr(">position=bogus</text>")));
  size_t lines = 0;
  for (size_t at = loss.find("<polyline"); at != std::string::npos; at = loss.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 3u + 2u + 2u);  // faint seed lines plus one mean line per cell
  std::string bars = MainMetricSvg(r);
  EXPECT_THAT(bars, HasSubstr("0.310 ± 0.010 (n=3)"));
  EXPECT_THAT(bars, HasSubstr("1 of 3 seeds failed"));
  EXPECT_THAT(bars, HasSubstr(">invalid cell</text>"));
}

TEST_F(ResultsTableTest, WritesTheFourFilesAndRebuildsThemAfterMoreRunsFinish) {
  auto written = WriteReport(CollectResults(grid_));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->size(), 4u);
  for (const char* f : {"results.csv", "results.md", "loss_curves.svg", "token_accuracy.svg"})
    EXPECT_TRUE(std::filesystem::exists(grid_.results_dir + "/" + f)) << f;
  // Seed 2 is rerun and finishes: the table, rebuilt from the directories, follows.
  std::filesystem::remove(grid_.cells[1].runs[2].run_dir + "/failed.txt");
  FinishRun(grid_.cells[1].runs[2], 0.98, 0.1);
  ASSERT_TRUE(WriteReport(CollectResults(grid_)).ok());
  std::ifstream in(grid_.results_dir + "/results.md");
  std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(md, HasSubstr("| sinusoidal (baseline) | 3 | 0.980 ± 0.010 |"));
}

// The legend colour and dash of the cell labelled `label` in a loss plot.
std::pair<std::string, std::string> LegendStyle(const std::string& svg, const std::string& label) {
  std::smatch m;
  std::regex entry("<line [^>]*stroke=\"(#[0-9a-f]+)\" stroke-width=\"[0-9.]+\"( stroke-dasharray=\"([^\"]*)\")?/>\n"
                   "<text [^>]*>" + label + "</text>");
  if (!std::regex_search(svg, m, entry)) return {"missing", ""};
  return {m[1], m[3]};
}

TEST(ResultsPlots, ColourFollowsTheLeadingAxesAndDashTheLast) {
  Write(Tmp() + "/style/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  Write(Tmp() + "/style/g.pbtxt", R"pb(base_spec: "base.pbtxt" output_dir: "out"
    axis { field: "model.position.plugin" values: ["none", "sinusoidal"] label: "position" }
    axis { field: "model.norm.placement" values: ["pre_ln", "post_ln"] label: "placement" })pb");
  auto spec = ParseGridFile(Tmp() + "/style/g.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, Tmp() + "/style/g.pbtxt", Tmp());
  ASSERT_TRUE(grid.ok()) << grid.status();
  for (const GridCell& c : grid->cells) FinishRun(c.runs[0], 0.5, 1.0);
  std::string svg = LossCurvesSvg(CollectResults(*grid));
  auto none_pre = LegendStyle(svg, "position=none placement=pre_ln");
  auto none_post = LegendStyle(svg, "position=none placement=post_ln");
  auto sin_pre = LegendStyle(svg, "position=sinusoidal placement=pre_ln");
  auto sin_post = LegendStyle(svg, "position=sinusoidal placement=post_ln");
  ASSERT_NE(none_pre.first, "missing") << svg;
  EXPECT_EQ(none_pre.first, none_post.first);
  EXPECT_EQ(sin_pre.first, sin_post.first);
  EXPECT_NE(none_pre.first, sin_pre.first);
  EXPECT_EQ(none_pre.second, "");
  EXPECT_EQ(sin_pre.second, "");
  EXPECT_EQ(none_post.second, "7 4");
  EXPECT_EQ(sin_post.second, "7 4");
}

TEST(MainMetric, MustBeAMetric) {
  EXPECT_TRUE(ValidateMainMetric("sequence_accuracy").ok());
  EXPECT_TRUE(ValidateMainMetric("bleu").ok());  // a metric only some tasks record
  EXPECT_THAT(std::string(ValidateMainMetric("acc").message()),
              HasSubstr("main_metric: 'acc' is not a metric; metrics: token_accuracy, sequence_accuracy"));
}

TEST(FormatSi, ThreeSignificantDigits) {
  EXPECT_EQ(FormatSi(789), "789");
  EXPECT_EQ(FormatSi(45600), "45.6k");
  EXPECT_EQ(FormatSi(1234567), "1.23M");
}

}  // namespace
}  // namespace tvlab
