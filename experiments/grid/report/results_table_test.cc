// The results table from run directories alone: seed statistics, deltas
// against the baseline, failed/missing/invalid cells, and the files.

#include "experiments/grid/report/results_table.h"

#include "experiments/grid/report/baseline_comparison.h"
#include "experiments/grid/report/scaling_report.h"

#include <cmath>
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
    std::filesystem::remove_all(Tmp() + "/rt/out");  // tests must not see each other's runs
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
  // Welch on these (scipy.stats.ttest_ind(equal_var=False)): t = -58.02,
  // df = 1.684, p = 8.859e-04, 95% CI [-0.7298, -0.6102]; one cell tested,
  // so Holm's p is the same, and significant.
  EXPECT_THAT(md, HasSubstr("| none | 3 | 0.310 ± 0.010 | -0.670 \\* | [-0.730, -0.610] | 8.9e-04 | 8.9e-04 | "
                            "0.500 ± 0.000 | 0.000 |"));
  EXPECT_THAT(md, HasSubstr("| sinusoidal (baseline) | 2/3 | 0.980 ± 0.014 |  |  |  |  |"));
  EXPECT_THAT(md, HasSubstr("adjusted over the 1 cells tested"));
  EXPECT_THAT(md, Not(HasSubstr("bootstrap CI")));  // fewer than 5 seeds
  // The baseline finished 2 seeds: warned above the table and in its notes.
  EXPECT_THAT(md, HasSubstr("**Warning:** 1 cell has fewer than 3 finished seeds"));
  EXPECT_THAT(md, HasSubstr("fewer than 3 seeds; seed 2 failed"));
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

// A run whose training diverged is finished, with no evaluation metrics: the
// table counts it per cell (with the step), keeps the row, and leaves it out
// of the means and the test instead of showing a fake 0 or a failure.
TEST_F(ResultsTableTest, DivergedRunsAreCountedNotAveraged) {
  Write(grid_.cells[0].runs[2].run_dir + "/metrics.json",
        "{\"diverged_at_step\": 7, \"diverged_loss\": \"NaN\", \"final_train_loss\": 2.1, \"steps\": 7}");
  GridResults r = CollectResults(grid_);
  EXPECT_EQ(r.runs(RunState::kFinished), 5);
  EXPECT_TRUE(r.cells[0].runs[2].diverged());
  EXPECT_FALSE(r.cells[0].runs[1].diverged());
  EXPECT_EQ(r.cells[0].diverged(), 1);
  EXPECT_EQ(r.cells[0].finished(), 2);
  EXPECT_EQ(r.cells[0].Values("token_accuracy"), (std::vector<double>{0.30, 0.31}));
  EXPECT_EQ(r.cells[0].Values("final_train_loss"), (std::vector<double>{1.7, 1.7}));
  const std::string md = ResultsMarkdown(r);
  EXPECT_THAT(md, HasSubstr("5 finished (1 of them diverged), 1 failed"));
  EXPECT_THAT(md, HasSubstr("| position | seeds | diverged | **token_accuracy** |"));
  EXPECT_THAT(md, HasSubstr("| none | 2/3 | 1/3 (step 7) | 0.305 ± 0.007 |"));
  EXPECT_THAT(md, HasSubstr("| sinusoidal (baseline) | 2/3 | 0 | 0.980 ± 0.014 |"));
  EXPECT_THAT(md, HasSubstr("seed 2 diverged at step 7 (loss nan)"));
  EXPECT_THAT(md, Not(HasSubstr("seed 2 failed: training diverged")));
  const std::string csv = ResultsCsv(r);
  EXPECT_THAT(csv, HasSubstr("position=none,none,2,diverged,false,,,,2.1,"));
  EXPECT_THAT(csv, HasSubstr(",7,nan\n"));
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const std::string& line : lines) {  // (quoted fields may hold commas)
    if (line.find('"') == std::string::npos) {
      EXPECT_EQ(std::count(line.begin(), line.end(), ','), columns) << line;
    }
  }
  EXPECT_THAT(MainMetricSvg(r), HasSubstr("1 of 3 seeds diverged"));
}

// eval.context_lengths and eval.decode_speed_tokens: a perplexity column per
// evaluation context and a decoding-speed column, in results.md and
// results.csv, only when runs recorded them; METRIC@LENGTH names them.
TEST_F(ResultsTableTest, PerContextPerplexityAndDecodeSpeedColumns) {
  EXPECT_THAT(ResultsMarkdown(CollectResults(grid_)), Not(HasSubstr("ppl@")));
  EXPECT_THAT(ResultsCsv(CollectResults(grid_)), Not(HasSubstr("decode_tokens_per_second")));
  const double ppl[3] = {10.0, 12.0, 14.0};
  for (int seed = 0; seed < 3; ++seed) {
    Write(grid_.cells[0].runs[seed].run_dir + "/metrics.json",
          absl::StrCat("{\"token_accuracy\": 0.3, \"eval_loss\": 2.3, \"decode_tokens_per_second\": ",
                       1000 * (seed + 1), ", \"context_evals\": [",
                       "{\"context_length\": 128, \"eval_loss\": 2.3, \"perplexity\": 9.97, \"eval_examples\": 27},",
                       "{\"context_length\": 1024, \"eval_loss\": 2.5, \"perplexity\": ", ppl[seed],
                       ", \"eval_examples\": 3}]}"));
  }
  GridResults r = CollectResults(grid_);
  EXPECT_DOUBLE_EQ(*MetricValue(r.cells[0].runs[1].metrics, "perplexity@1024"), 12.0);
  EXPECT_DOUBLE_EQ(*MetricValue(r.cells[0].runs[1].metrics, "eval_loss@1024"), 2.5);
  EXPECT_EQ(r.cells[0].Values("perplexity@1024"), (std::vector<double>{10.0, 12.0, 14.0}));
  auto absent = MetricValue(r.cells[0].runs[0].metrics, "perplexity@512");
  EXPECT_THAT(std::string(absent.status().message()), HasSubstr("it was not evaluated at context 512"));
  EXPECT_TRUE(r.cells[1].Values("perplexity@1024").empty());  // the other cell's runs have none
  const std::string md = ResultsMarkdown(r);
  EXPECT_THAT(md, HasSubstr("| ppl@128 | ppl@1024 | params |"));
  EXPECT_THAT(md, HasSubstr("| train s | decode tok/s | notes |"));
  EXPECT_THAT(md, HasSubstr("| 9.970 ± 0.000 | 12.000 ± 2.000 |"));
  EXPECT_THAT(md, HasSubstr("| 2k |"));  // mean decoding speed of the three seeds
  EXPECT_THAT(md, HasSubstr("context_perplexity.svg"));
  const std::string csv = ResultsCsv(r);
  EXPECT_THAT(csv, HasSubstr(",diverged_at_step,diverged_loss,perplexity@128,perplexity@1024,"
                             "decode_tokens_per_second\n"));
  EXPECT_THAT(csv, HasSubstr(",,,9.97,12,2000\n"));
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const std::string& line : lines) {  // (quoted fields may hold commas)
    if (line.find('"') == std::string::npos) {
      EXPECT_EQ(std::count(line.begin(), line.end(), ','), columns) << line;
    }
  }
  EXPECT_THAT(ContextPerplexitySvg(r), HasSubstr("position=none"));
  EXPECT_TRUE(ValidateMainMetric("perplexity@1024").ok());
  EXPECT_THAT(std::string(ValidateMainMetric("token_accuracy@1024").message()),
              HasSubstr("only eval_loss, perplexity, bits_per_byte are measured per context"));
  EXPECT_THAT(std::string(ValidateMainMetric("perplexity@long").message()),
              HasSubstr("'long' is not a context length"));
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
  EXPECT_EQ(written->size(), 5u);
  for (const char* f : {"results.csv", "results.md", "significance.csv", "loss_curves.svg", "token_accuracy.svg"})
    EXPECT_TRUE(std::filesystem::exists(grid_.results_dir + "/" + f)) << f;
  // Seed 2 is rerun and finishes: the table, rebuilt from the directories, follows.
  std::filesystem::remove(grid_.cells[1].runs[2].run_dir + "/failed.txt");
  FinishRun(grid_.cells[1].runs[2], 0.98, 0.1);
  ASSERT_TRUE(WriteReport(CollectResults(grid_)).ok());
  std::ifstream in(grid_.results_dir + "/results.md");
  std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(md, HasSubstr("| sinusoidal (baseline) | 3 | 0.980 ± 0.010 |"));
  EXPECT_THAT(md, Not(HasSubstr("**Warning:**")));  // every cell has 3 seeds now
}

// A finished run whose metrics.json holds a huge finite value (a corrupt
// 1e308, or a diverged eval_loss near FLT_MAX): the variance overflowed, df
// became NaN and Boost's Student-t threw, so the report aborted (exit 134)
// and no results.md was written. Now the statistics are computed in scaled
// arithmetic, and a delta beyond a double's range is shown as undefined.
TEST_F(ResultsTableTest, HugeFiniteMetricValuesStillGiveAReport) {
  const auto& none = grid_.cells[0].runs;
  FinishRun(none[0], 1e308, 1.7), FinishRun(none[1], 0.9e308, 1.7), FinishRun(none[2], 0.8e308, 1.7);
  auto written = WriteReport(CollectResults(grid_));
  ASSERT_TRUE(written.ok()) << written.status();
  std::ifstream in(grid_.results_dir + "/results.md");
  std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(md, HasSubstr("| none | 3 | 9.000e+307 ± 1.000e+307 | +9.000e+307 \\* |"));
  GridComparison cmp = CompareWithBaseline(CollectResults(grid_), "token_accuracy");
  ASSERT_TRUE(cmp.cells[0].has_value());
  EXPECT_TRUE(cmp.cells[0]->welch.defined) << cmp.cells[0]->welch.why_undefined;
  EXPECT_NEAR(cmp.cells[0]->welch.delta / 0.9e308, 1, 1e-12);
  // Opposite extremes: the delta itself is beyond a double's range.
  for (const GridRun& run : grid_.cells[1].runs) FinishRun(run, -1.7e308, 0.1);
  FinishRun(none[0], 1.7e308, 1.7), FinishRun(none[1], 1.6e308, 1.7), FinishRun(none[2], 1.5e308, 1.7);
  ASSERT_TRUE(WriteReport(CollectResults(grid_)).ok());
  cmp = CompareWithBaseline(CollectResults(grid_), "token_accuracy");
  EXPECT_FALSE(cmp.cells[0]->welch.defined);
}

TEST_F(ResultsTableTest, SignificanceCsvAndFewSeedsWarnings) {
  GridResults r = CollectResults(grid_);
  GridComparison cmp = CompareWithBaseline(r, "token_accuracy");
  ASSERT_TRUE(cmp.cells[0].has_value());
  EXPECT_FALSE(cmp.cells[1].has_value());  // the baseline
  EXPECT_FALSE(cmp.cells[2].has_value());  // invalid
  EXPECT_NEAR(cmp.cells[0]->welch.p, 0.0008859196371987057, 1e-12);
  EXPECT_TRUE(cmp.cells[0]->significant);
  EXPECT_TRUE(cmp.cells[0]->few_seeds);
  std::string csv = SignificanceCsv(r, cmp);
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << csv;
  EXPECT_THAT(lines[1], HasSubstr("position=none,token_accuracy,3,2,-0.67"));
  EXPECT_THAT(lines[1], HasSubstr(",true,,,fewer than 3 seeds"));
  std::vector<std::string> warnings = FewSeedsWarnings(r);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("cell 'position=sinusoidal' has 2 finished seeds (fewer than 3)"));
}

// Five seeds per cell: a cell within seed noise of the baseline is not
// marked, a clearly better one is, Holm corrects over both, and the
// bootstrap column appears.
TEST(Significance, HolmOverCellsAndBootstrapFromFiveSeeds) {
  Write(Tmp() + "/sig/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  Write(Tmp() + "/sig/g.pbtxt", R"pb(base_spec: "base.pbtxt" output_dir: "out"
    axis { field: "model.position.plugin" values: ["none", "sinusoidal", "learned"] label: "position" }
    seeds: [0, 1, 2, 3, 4]
    baseline: "position=sinusoidal")pb");
  auto spec = ParseGridFile(Tmp() + "/sig/g.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, Tmp() + "/sig/g.pbtxt", Tmp());
  ASSERT_TRUE(grid.ok()) << grid.status();
  const std::vector<double> none = {0.50, 0.52, 0.49, 0.51, 0.53};
  const std::vector<double> sinusoidal = {0.90, 0.91, 0.89, 0.92, 0.90};
  const std::vector<double> learned = {0.91, 0.89, 0.90, 0.92, 0.89};
  for (int s = 0; s < 5; ++s) {
    FinishRun(grid->cells[0].runs[s], none[s], 1.0);
    FinishRun(grid->cells[1].runs[s], sinusoidal[s], 1.0);
    FinishRun(grid->cells[2].runs[s], learned[s], 1.0);
  }
  GridResults r = CollectResults(*grid);
  GridComparison cmp = CompareWithBaseline(r, "token_accuracy");
  EXPECT_EQ(cmp.family_size, 2);
  ASSERT_TRUE(cmp.cells[0] && cmp.cells[2]);
  EXPECT_TRUE(cmp.cells[0]->significant);
  EXPECT_FALSE(cmp.cells[2]->significant);
  const std::vector<double> holm = HolmAdjust({cmp.cells[0]->welch.p, cmp.cells[2]->welch.p});
  EXPECT_DOUBLE_EQ(*cmp.cells[0]->holm_p, holm[0]);
  EXPECT_DOUBLE_EQ(*cmp.cells[2]->holm_p, holm[1]);
  ASSERT_TRUE(cmp.cells[0]->bootstrap);
  EXPECT_LT(cmp.cells[0]->bootstrap->high, 0);
  EXPECT_GT(cmp.cells[2]->bootstrap->high, 0);
  EXPECT_LT(cmp.cells[2]->bootstrap->low, 0);
  std::string md = ResultsMarkdown(r);
  EXPECT_THAT(md, HasSubstr("Δ bootstrap CI"));
  EXPECT_THAT(md, HasSubstr("B = 10000 resamples per group, seed 20240611"));
  EXPECT_THAT(md, HasSubstr("| none | 5 | 0.510 ± 0.016 | -0.394 \\* | "));
  EXPECT_THAT(md, HasSubstr("| learned | 5 | 0.902 ± 0.013 | -0.002 | "));
  EXPECT_TRUE(FewSeedsWarnings(r).empty());
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

// Scaling: two variants over four sizes (the axis value is N), losses made
// from known power laws: the fits recover the exponents, the table lists
// them and their crossing, the plot is log-log; a variant with too few
// sizes says so.
TEST(Scaling, FitsPerVariantAndReportsCrossings) {
  Write(Tmp() + "/scale/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  Write(Tmp() + "/scale/g.pbtxt", R"pb(base_spec: "base.pbtxt" output_dir: "out"
    axis { field: "model.position.plugin" values: ["sinusoidal", "rope", "learned"] label: "position" }
    axis { field: "model.d_model" values: ["8", "16", "32", "64"] }
    seeds: [0, 1]
    scaling { axis: "d_model" size: AXIS_VALUE metric: "final_train_loss" })pb");
  auto spec = ParseGridFile(Tmp() + "/scale/g.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, Tmp() + "/scale/g.pbtxt", Tmp());
  ASSERT_TRUE(grid.ok()) << grid.status();
  // sinusoidal: 10 N^-0.5 + 1, rope: 100 N^-0.8 + 1 (they cross at 10^(1/0.3)
  // = 2154, outside 8..64, so no crossing is reported); seeds ±0.001.
  for (const GridCell& c : grid->cells) {
    const double n = std::stod(c.axis_values[1]);
    for (size_t s = 0; s < c.runs.size(); ++s) {
      const double noise = s == 0 ? 0.001 : -0.001;
      const double loss = c.axis_values[0] == "sinusoidal" ? 10 * std::pow(n, -0.5) + 1 : 100 * std::pow(n, -0.8) + 1;
      if (c.axis_values[0] == "learned" && n > 16) continue;  // only two sizes finished
      FinishRun(c.runs[s], 0.5, loss + noise);
    }
  }
  GridResults r = CollectResults(*grid);
  std::vector<VariantScaling> fits = FitScaling(r);
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_EQ(fits[0].variant, "position=sinusoidal");
  ASSERT_TRUE(fits[0].fit.ok()) << fits[0].fit.status();
  EXPECT_NEAR(fits[0].fit->b, 0.5, 0.05);
  ASSERT_TRUE(fits[1].fit.ok()) << fits[1].fit.status();
  EXPECT_NEAR(fits[1].fit->b, 0.8, 0.05);
  EXPECT_FALSE(fits[2].fit.ok());
  std::string md = ResultsMarkdown(r);
  EXPECT_THAT(md, HasSubstr("## Scaling"));
  EXPECT_THAT(md, HasSubstr("| position=sinusoidal | 8 | 0.5"));
  EXPECT_THAT(md, HasSubstr("| position=learned | 4 |  |  |  | no fit: too few points for a scaling fit"));
  EXPECT_THAT(md, HasSubstr("No two fitted curves cross within the sizes measured (N from 8 to 64)."));
  std::string svg = ScalingSvg(r, fits);
  EXPECT_THAT(svg, HasSubstr("(log scale)"));
  EXPECT_THAT(svg, HasSubstr("position=rope (b = 0.8"));
  // Written beside the other files.
  auto written = WriteReport(r);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(std::filesystem::exists(grid->results_dir + "/scaling.svg"));
}

TEST(Scaling, AxisMustExistAndBeNumericForAxisValue) {
  Write(Tmp() + "/scale2/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 3 })pb");
  auto expand = [](const std::string& text) {
    Write(Tmp() + "/scale2/g.pbtxt", text);
    auto spec = ParseGridFile(Tmp() + "/scale2/g.pbtxt");
    return ExpandGrid(*spec, Tmp() + "/scale2/g.pbtxt", Tmp());
  };
  auto missing = expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.position.plugin" values: ["none", "rope"] } scaling { axis: "size" })pb");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("scaling.axis 'size' is not an axis of the grid; the axes are plugin"));
  // A zipped size axis: its partners are not variants.
  auto zipped = expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.position.plugin" values: ["none", "rope"] label: "position" }
    zip { axis { field: "model.d_model" values: ["8", "16"] } axis { field: "model.d_ff" values: ["16", "32"] } }
    scaling { axis: "model.d_model" })pb");
  ASSERT_TRUE(zipped.ok()) << zipped.status();
  EXPECT_EQ(zipped->scaling_column, 1);
  EXPECT_EQ(zipped->scaling_group, (std::vector<int>{1, 2}));
  auto text = expand(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.position.plugin" values: ["none", "rope"] } scaling { axis: "plugin" size: AXIS_VALUE })pb");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("the value 'none' of plugin is not a positive number"));
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
