// probes.csv and results.md's "Probes (exploratory)" section from fabricated
// run directories: every probe of every finished run (diverged ones marked),
// written to round-trip; a missing seed has no rows; a grid whose runs
// recorded no probes gets no file and no section.

#include "experiments/grid/report/probes_report.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/grid/report/results_table.h"
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

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One entry of metrics.json's probes, as the trainer writes it.
std::string Probe(const std::string& name, const std::string& first, const std::string& last,
                  const std::string& max, const std::string& mean, int count) {
  return absl::StrCat("{\"name\": \"", name, "\", \"first\": ", first, ", \"last\": ", last, ", \"max\": ", max,
                      ", \"mean\": ", mean, ", \"first_step\": 0, \"last_step\": ", 5 * (count - 1),
                      ", \"count\": ", count, "}");
}

void Finish(const GridRun& run, const std::vector<std::string>& probes, const std::string& extra = "") {
  std::string list;
  for (const std::string& p : probes) absl::StrAppend(&list, list.empty() ? "" : ", ", p);
  Write(run.run_dir + "/metrics.json",
        absl::StrCat("{\"token_accuracy\": 0.5, \"eval_loss\": 1.0, \"steps\": 10", extra,
                     probes.empty() ? "" : absl::StrCat(", \"probes\": [", list, "]"), "}"));
}

ExpandedGrid Expand(const std::string& name, const std::string& extra) {
  const std::string dir = Tmp() + "/" + name;
  std::filesystem::remove_all(dir);
  Write(dir + "/base.pbtxt", R"pb(name: "tiny"
    model { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 }
    task { plugin: "sort_digits" } train { steps: 10 })pb");
  Write(dir + "/g.pbtxt", absl::StrCat(R"pb(base_spec: "base.pbtxt"
    axis { field: "model.norm.placement" values: ["pre_ln", "post_ln"] label: "placement" }
    seeds: [0, 1, 2]
    output_dir: "out"
  )pb", extra));
  auto spec = ParseGridFile(dir + "/g.pbtxt");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, dir + "/g.pbtxt", dir);
  EXPECT_TRUE(grid.ok()) << grid.status();
  return *std::move(grid);
}

// pre_ln: seeds 0 and 1 finished, seed 2 never ran. post_ln: seed 0
// finished, seed 1 diverged (its probes recorded up to the divergence),
// seed 2 failed.
class ProbesReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grid_ = Expand("probes", R"pb(set: "train.probe_every=5"
      report_probes: ["grad_norm/", "logits/max", "router_load/"])pb");
    const auto& pre = grid_.cells[0].runs;
    const auto& post = grid_.cells[1].runs;
    Finish(pre[0], {Probe("grad_norm/encoder.layers.0", "1.5", "0.25", "3", "0.75", 3),
                    Probe("grad_norm/encoder.layers.1", "0.30000000000000004", "0.5", "0.5", "0.4", 3),
                    Probe("attention_entropy/encoder.layers.0.attention", "0.6931471805599453", "0.5", "0.7",
                          "0.6", 3),
                    Probe("logits/max", "2", "8", "8", "5", 3)});
    Finish(pre[1], {Probe("grad_norm/encoder.layers.0", "2.5", "0.5", "5", "1", 3),
                    Probe("grad_norm/encoder.layers.1", "0.1", "0.5", "0.7", "0.4", 3),
                    Probe("attention_entropy/encoder.layers.0.attention", "0.6", "0.5", "0.7", "0.6", 3),
                    Probe("logits/max", "4", "6", "6", "5", 3)});
    Finish(post[0], {Probe("grad_norm/encoder.layers.0", "0.125", "0.1", "0.2", "0.15", 3),
                     Probe("grad_norm/encoder.layers.1", "9.5", "1", "9.5", "4", 3),
                     Probe("logits/max", "3", "1e+20", "1e+20", "3.3333333333333335e+19", 3)});
    Finish(post[1], {Probe("grad_norm/encoder.layers.0", "0.125", "\"NaN\"", "64", "\"NaN\"", 2)},
           ", \"diverged_at_step\": 7, \"diverged_loss\": \"NaN\"");
    Write(post[2].run_dir + "/failed.txt", "exit code 1\n");
  }
  ExpandedGrid grid_;
};

TEST_F(ProbesReportTest, CsvHasEveryProbeOfEveryFinishedRunExactly) {
  GridResults results = CollectResults(grid_);
  ASSERT_TRUE(AnyProbes(results));
  EXPECT_EQ(ProbesCsv(results),
            "cell,seed,state,probe,first,last,max,mean,first_step,last_step,count\n"
            "placement=pre_ln,0,finished,grad_norm/encoder.layers.0,1.5,0.25,3,0.75,0,10,3\n"
            "placement=pre_ln,0,finished,grad_norm/encoder.layers.1,0.30000000000000004,0.5,0.5,0.4,0,10,3\n"
            "placement=pre_ln,0,finished,attention_entropy/encoder.layers.0.attention,0.6931471805599453,0.5,0.7,"
            "0.6,0,10,3\n"
            "placement=pre_ln,0,finished,logits/max,2,8,8,5,0,10,3\n"
            "placement=pre_ln,1,finished,grad_norm/encoder.layers.0,2.5,0.5,5,1,0,10,3\n"
            "placement=pre_ln,1,finished,grad_norm/encoder.layers.1,0.1,0.5,0.7,0.4,0,10,3\n"
            "placement=pre_ln,1,finished,attention_entropy/encoder.layers.0.attention,0.6,0.5,0.7,0.6,0,10,3\n"
            "placement=pre_ln,1,finished,logits/max,4,6,6,5,0,10,3\n"
            "placement=post_ln,0,finished,grad_norm/encoder.layers.0,0.125,0.1,0.2,0.15,0,10,3\n"
            "placement=post_ln,0,finished,grad_norm/encoder.layers.1,9.5,1,9.5,4,0,10,3\n"
            // metrics.json's 3.3333333333333335e+19 is the double Python's repr writes ...336e+19.
            "placement=post_ln,0,finished,logits/max,3,1e+20,1e+20,3.3333333333333336e+19,0,10,3\n"
            "placement=post_ln,1,diverged,grad_norm/encoder.layers.0,0.125,nan,64,nan,0,5,2\n");
}

TEST_F(ProbesReportTest, CsvValuesReadBackAsTheSameDoubles) {
  const std::string csv = ProbesCsv(CollectResults(grid_));
  EXPECT_EQ(std::strtod("0.30000000000000004", nullptr), 0.1 + 0.2);
  EXPECT_NE(std::strtod("0.3", nullptr), 0.1 + 0.2);  // so 17 digits were needed above
  EXPECT_THAT(csv, HasSubstr(",0.6931471805599453,"));  // ln 2 as a double
  EXPECT_EQ(std::strtod("0.6931471805599453", nullptr), std::log(2.0));
}

TEST_F(ProbesReportTest, MarkdownTabulatesTheSelectedProbesOverSeedsWithResults) {
  const std::string md = ProbesMarkdown(CollectResults(grid_));
  EXPECT_THAT(md, HasSubstr("\n## Probes (exploratory)\n\n"));
  EXPECT_THAT(md, HasSubstr("recorded: `grad_norm/`, `attention_entropy/`, `logits/`."));
  EXPECT_THAT(md, HasSubstr("| placement | probe | seeds | first | max |\n|---|---|---:|---:|---:|\n"));
  // pre_ln: first (1.5 + 2.5) / 2, max (3 + 5) / 2; (0.3 + 0.1) / 2, (0.5 + 0.7) / 2.
  EXPECT_THAT(md, HasSubstr("| pre_ln | grad_norm/encoder.layers.0 | 2 | 2 | 4 |\n"
                            "| pre_ln | grad_norm/encoder.layers.1 | 2 | 0.2 | 0.6 |\n"
                            "| pre_ln | logits/max | 2 | 3 | 7 |\n"
                            "| post_ln | grad_norm/encoder.layers.0 | 1 | 0.125 | 0.2 |\n"
                            "| post_ln | grad_norm/encoder.layers.1 | 1 | 9.5 | 9.5 |\n"
                            "| post_ln | logits/max | 1 | 3 | 1e+20 |\n"));
  EXPECT_THAT(md, Not(HasSubstr("attention_entropy/encoder")));  // recorded, not selected
  EXPECT_THAT(md, HasSubstr("`report_probes` entry `router_load/` matches no probe of any finished run "
                            "(recorded: `grad_norm/`, `attention_entropy/`, `logits/`)."));
  EXPECT_THAT(md, Not(HasSubstr("entry `grad_norm/`")));
}

TEST_F(ProbesReportTest, ReportWritesProbesCsvAndRebuildsItIdentically) {
  auto written = WriteReport(CollectResults(grid_));
  ASSERT_TRUE(written.ok()) << written.status();
  const std::string path = grid_.results_dir + "/probes.csv";
  EXPECT_THAT(*written, ::testing::Contains(path));
  const std::string first = Read(path);
  const std::string md = Read(grid_.results_dir + "/results.md");
  EXPECT_THAT(md, HasSubstr("## Probes (exploratory)"));
  EXPECT_LT(md.find("## Probes"), md.find("![training loss]"));
  std::filesystem::remove(path);
  ASSERT_TRUE(WriteReport(CollectResults(grid_)).ok());  // as --report_only does
  EXPECT_EQ(Read(path), first);
  EXPECT_EQ(first, ProbesCsv(CollectResults(grid_)));
}

TEST(ProbesReport, NoProbesNoFileAndNoSection) {
  ExpandedGrid grid = Expand("none", "");
  for (const GridCell& cell : grid.cells)
    for (const GridRun& run : cell.runs) Finish(run, {});
  GridResults results = CollectResults(grid);
  EXPECT_FALSE(AnyProbes(results));
  EXPECT_EQ(ProbesMarkdown(results), "");
  auto written = WriteReport(results);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(std::filesystem::exists(grid.results_dir + "/probes.csv"));
  EXPECT_THAT(*written, Not(::testing::Contains(grid.results_dir + "/probes.csv")));
  EXPECT_THAT(Read(grid.results_dir + "/results.md"), Not(HasSubstr("Probes")));
}

TEST(ProbesReport, SelectionWithNothingRecordedYetSaysSo) {
  ExpandedGrid grid = Expand("pending", R"pb(set: "train.probe_every=5" report_probes: "grad_norm/")pb");
  GridResults results = CollectResults(grid);  // nothing ran
  EXPECT_FALSE(AnyProbes(results));
  EXPECT_EQ(ProbesMarkdown(results), "\n## Probes (exploratory)\n\nNo finished run has recorded training probes "
                                     "yet (`report_probes`: `grad_norm/`).\n");
  EXPECT_EQ(ProbesCsv(results), "cell,seed,state,probe,first,last,max,mean,first_step,last_step,count\n");
}

TEST(ProbesReport, WithoutReportProbesOnlyPointsToTheCsv) {
  ExpandedGrid grid = Expand("unselected", R"pb(set: "train.probe_every=5")pb");
  Finish(grid.cells[0].runs[0], {Probe("logits/max", "2", "8", "8", "5", 3)});
  const std::string md = ProbesMarkdown(CollectResults(grid));
  EXPECT_THAT(md, HasSubstr("recorded: `logits/`."));
  EXPECT_THAT(md, HasSubstr("`report_probes` in the grid spec"));
  EXPECT_THAT(md, Not(HasSubstr("| probe |")));
}

}  // namespace
}  // namespace tvlab
