// A tiny grid through the real run binary, as a user runs it: every cell
// trained in its own run directory keyed by its resolved spec, a failing cell
// recorded while the others go on, a second invocation that runs nothing,
// an extended grid that runs only the new cells, interrupted runs picked up
// again, the report rebuilt from the run directories, invalid cells
// reported before anything trains, and training probes in the report.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_split.h"
#include "experiments/grid/expand/grid_loader.h"
#include "experiments/grid/expand/run_key.h"
#include "framework/report/run_dir.h"
#include "framework/schema/spec_text.h"
#include "framework/spec/spec_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const char kBase[] = R"pb(name: "tiny_sort"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 } } }
train { steps: 20 log_every: 5 checkpoint_every: 10 fail_on_divergence: true }
eval { examples: 50 batch_size: 50 }
)pb";

// lr 1e30 makes the first update overflow: with fail_on_divergence the run
// fails with a NaN loss (without it, divergence is a recorded result: see
// DivergedRunsAreDataNotFailures).
std::string Grid(const std::string& lrs) {
  return "base_spec: \"base.pbtxt\"\n"
         "axis { field: \"model.position.plugin\" values: [\"none\", \"sinusoidal\"] label: \"position\" }\n"
         "axis { field: \"train.optimizer.adamw.lr\" values: [" + lrs + "] label: \"lr\" }\n"
         "seeds: [0, 1]\n"
         "baseline: [\"position=sinusoidal\", \"lr=1e-3\"]\n"
         "output_dir: \"out\"\n";
}

class GridEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("base.pbtxt", kBase);
  }
  void Write(const std::string& file, const std::string& text) { std::ofstream(dir_ + "/" + file) << text; }
  RunResult Run(const std::string& args) { return RunBinary(dir_ + "/" + args); }
  std::vector<std::string> RunDirs() {
    std::vector<std::string> out;
    if (!fs::exists(dir_ + "/out/runs")) return out;
    for (const auto& e : fs::directory_iterator(dir_ + "/out/runs")) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  std::string dir_;
};

TEST_F(GridEndToEnd, DivergedRunsAreDataNotFailures) {
  std::string base = kBase;
  base.replace(base.find(" fail_on_divergence: true"), std::string(" fail_on_divergence: true").size(), "");
  Write("base.pbtxt", base);
  Write("grid.pbtxt",
        "base_spec: \"base.pbtxt\"\n"
        "axis { field: \"train.optimizer.adamw.lr\" values: [\"1e-3\", \"1e30\"] label: \"lr\" }\n"
        "seeds: [0, 1]\nbaseline: [\"lr=1e-3\"]\noutput_dir: \"out\"\n");
  RunResult r = Run("grid.pbtxt --jobs 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;  // divergence is a result, not a failure
  EXPECT_THAT(r.output, HasSubstr("lr=1e30 seed 0 in "));
  EXPECT_THAT(r.output, HasSubstr(": diverged at step "));
  const std::string csv = ReadFile(dir_ + "/out/results.csv");
  EXPECT_EQ(Count(csv, ",finished,"), 2u) << csv;
  EXPECT_EQ(Count(csv, ",diverged,"), 2u) << csv;
  EXPECT_THAT(csv, HasSubstr(",diverged_at_step,diverged_loss\n"));
  const std::string md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("4 runs: 4 finished (2 of them diverged), 0 failed, 0 not run."));
  EXPECT_THAT(md, HasSubstr("| lr | seeds | diverged |"));
  // The diverged cell keeps its row: 0 seeds with results, 2 of 2 diverged and where.
  EXPECT_THAT(md, HasSubstr("| 1e30 | 0/2 | 2/2 (steps "));
  EXPECT_THAT(md, HasSubstr("seed 1 diverged at step "));
  EXPECT_THAT(md, HasSubstr("| 1e-3 (baseline) | 2 | 0 | "));
  EXPECT_THAT(ReadFile(dir_ + "/out/token_accuracy.svg"), HasSubstr("2 of 2 seeds diverged"));
  // A second invocation keeps them: they are finished.
  RunResult again = Run("grid.pbtxt");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("4 runs: 4 finished (skipped)"));
}

TEST_F(GridEndToEnd, TrainsEveryCellRecordsFailuresResumesAndExtends) {
  Write("grid.pbtxt", Grid("\"1e-3\", \"1e30\""));
  RunResult first = Run("grid.pbtxt --jobs 2");
  EXPECT_EQ(first.exit_code, 1) << first.output;  // some runs failed
  EXPECT_THAT(first.output, HasSubstr("grid grid: 4 cells x 2 seed(s)"));
  EXPECT_THAT(first.output, HasSubstr("8 runs: 0 finished (skipped), 8 to run"));
  EXPECT_THAT(first.output, HasSubstr("ETA"));
  EXPECT_EQ(Count(first.output, "\nstarting "), 8u) << first.output;

  // One directory per run, named by the key of the spec it trained.
  std::vector<std::string> dirs = RunDirs();
  ASSERT_EQ(dirs.size(), 8u);
  int finished = 0, failed = 0;
  for (const std::string& d : dirs) {
    auto spec = ParseSpecFile(d + "/spec.resolved.pbtxt");
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(RunKey(*spec), fs::path(d).filename().string());
    EXPECT_TRUE(fs::exists(d + "/grid_run.pbtxt"));
    if (fs::exists(d + "/metrics.json")) {
      ++finished;
      EXPECT_THAT(SpecToText(*spec), HasSubstr("lr: 0.001"));
    } else {
      ++failed;
      EXPECT_THAT(ReadFile(d + "/failed.txt"), HasSubstr("training loss became"));
      EXPECT_THAT(SpecToText(*spec), HasSubstr("lr: 1e+30"));
    }
  }
  EXPECT_EQ(finished, 4);
  EXPECT_EQ(failed, 4);

  // The report: one CSV row per cell and seed, one markdown row per cell.
  std::string csv = ReadFile(dir_ + "/out/results.csv");
  EXPECT_EQ(Count(csv, "\n"), 1u + 8u);
  EXPECT_EQ(Count(csv, ",finished,"), 4u);
  EXPECT_EQ(Count(csv, ",failed,"), 4u);
  std::string md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("4 cells (0 invalid), 8 runs: 4 finished, 4 failed, 0 not run."));
  EXPECT_THAT(md, HasSubstr("| sinusoidal | 1e-3 (baseline) | 2 | "));
  EXPECT_THAT(md, HasSubstr("seed 0 failed: training loss became"));
  EXPECT_THAT(ReadFile(dir_ + "/out/loss_curves.svg"), HasSubstr(">position=none lr=1e-3</text>"));
  EXPECT_THAT(ReadFile(dir_ + "/out/token_accuracy.svg"), HasSubstr("2 of 2 seeds failed"));

  // Again: nothing runs.
  const auto metrics_time = fs::last_write_time(dirs[0] + "/run.log");
  RunResult second = Run("grid.pbtxt");
  EXPECT_THAT(second.output, HasSubstr("8 runs: 4 finished (skipped), 4 failed earlier (kept; --retry_failed "
                                       "reruns them), 0 to run"));
  EXPECT_EQ(Count(second.output, "starting "), 0u) << second.output;
  EXPECT_EQ(fs::last_write_time(dirs[0] + "/run.log"), metrics_time);

  // Extended with a new learning rate: only its two cells (four runs) train.
  Write("grid.pbtxt", Grid("\"1e-3\", \"1e30\", \"3e-3\""));
  RunResult third = Run("grid.pbtxt");
  EXPECT_THAT(third.output, HasSubstr("12 runs: 4 finished (skipped), 4 failed earlier"));
  EXPECT_THAT(third.output, HasSubstr("4 to run"));
  EXPECT_EQ(Count(third.output, "starting "), 4u) << third.output;
  EXPECT_EQ(Count(third.output, "starting position=none lr=3e-3 seed "), 2u);
  EXPECT_EQ(Count(third.output, "starting position=sinusoidal lr=3e-3 seed "), 2u);
  EXPECT_EQ(RunDirs().size(), 12u);

  // Two runs interrupted: one after its last checkpoint (it resumes from
  // there), one before any directory existed (it starts over).
  std::vector<std::string> finished_dirs;
  for (const std::string& d : RunDirs())
    if (fs::exists(d + "/metrics.json")) finished_dirs.push_back(d);
  ASSERT_GE(finished_dirs.size(), 2u);
  fs::remove(finished_dirs[0] + "/metrics.json");
  fs::remove_all(finished_dirs[1]);
  RunResult fourth = Run("grid.pbtxt");
  EXPECT_THAT(fourth.output, HasSubstr("2 to run (1 resume from a checkpoint)"));
  EXPECT_EQ(Count(fourth.output, "\nresuming "), 1u) << fourth.output;
  EXPECT_EQ(Count(fourth.output, "\nstarting "), 1u) << fourth.output;
  EXPECT_TRUE(fs::exists(finished_dirs[0] + "/metrics.json"));
  EXPECT_TRUE(fs::exists(finished_dirs[1] + "/metrics.json"));
  EXPECT_THAT(ReadFile(finished_dirs[0] + "/run.log"), HasSubstr("resuming"));

  // The report comes back from the run directories alone.
  fs::remove(dir_ + "/out/results.md");
  fs::remove(dir_ + "/out/results.csv");
  RunResult report = Run("grid.pbtxt --report_only");
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_EQ(Count(report.output, "starting "), 0u);
  EXPECT_THAT(ReadFile(dir_ + "/out/results.md"),
              HasSubstr("6 cells (0 invalid), 12 runs: 8 finished, 4 failed, 0 not run."));
  EXPECT_EQ(Count(ReadFile(dir_ + "/out/results.csv"), "\n"), 1u + 12u);
}

TEST_F(GridEndToEnd, InterruptedGridStopsItsRunsAndResumesThemFromTheirCheckpoint) {
  // A run long enough to be caught in flight, checkpointing often.
  Write("long.pbtxt", std::string(kBase).replace(std::string(kBase).find("steps: 20 log_every: 5 checkpoint_every: 10"),
                                                 43, "steps: 200000 log_every: 50 checkpoint_every: 20"));
  Write("grid.pbtxt", "base_spec: \"long.pbtxt\"\noutput_dir: \"out\"\n");
  const std::string log = dir_ + "/interrupted.log";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child's output goes to the log the test reads; without it the
    // test could not say why the grid failed, so the child stops (126).
    if (freopen(log.c_str(), "w", stderr) == nullptr || freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    execl(Runfile("experiments/run").c_str(), "run", (dir_ + "/grid.pbtxt").c_str(), (char*)nullptr);
    _exit(127);
  }
  // Interrupt once the run has a complete checkpoint.
  bool checkpointed = false;
  for (int i = 0; i < 1200 && !checkpointed; ++i) {
    for (const std::string& d : RunDirs()) checkpointed |= fs::exists(d + "/checkpoints/latest");
    if (!checkpointed) usleep(50 * 1000);
  }
  ASSERT_TRUE(checkpointed) << ReadFile(log);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::string output = ReadFile(log);
  EXPECT_THAT(output, HasSubstr("interrupted (Interrupt); 1 run(s) in flight were stopped"));
  ASSERT_EQ(RunDirs().size(), 1u);
  EXPECT_FALSE(fs::exists(RunDirs()[0] + "/failed.txt")) << "an interrupted run is not a failed one";
  EXPECT_FALSE(fs::exists(RunDirs()[0] + "/metrics.json"));

  RunResult plan = Run("grid.pbtxt --dry_run");
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_THAT(plan.output, HasSubstr("1 runs: 0 finished (skipped), 1 to run (1 resume from a checkpoint)"));
  EXPECT_THAT(plan.output, HasSubstr("resume " + fs::path(RunDirs()[0]).filename().string()));
}

TEST_F(GridEndToEnd, InvalidCellsAreReportedBeforeAnythingTrains) {
  const std::string grid = "base_spec: \"base.pbtxt\"\noutput_dir: \"out\"\n"
                           "axis { field: \"model.num_heads\" values: [\"2\", \"3\"] }\n";
  Write("stop.pbtxt", grid);
  RunResult stop = Run("stop.pbtxt");
  EXPECT_EQ(stop.exit_code, 2) << stop.output;
  EXPECT_THAT(stop.output, HasSubstr("1 of 2 cells are invalid:\n  num_heads=3:\n    model.num_heads: d_model (16) "
                                     "must be divisible by num_heads (3)"));
  EXPECT_THAT(stop.output, HasSubstr("Nothing was trained"));
  EXPECT_TRUE(RunDirs().empty());

  Write("skip.pbtxt", grid + "invalid_cells: SKIP\n");
  RunResult skip = Run("skip.pbtxt");
  EXPECT_EQ(skip.exit_code, 0) << skip.output;
  EXPECT_EQ(RunDirs().size(), 1u);
  EXPECT_THAT(ReadFile(dir_ + "/out/results.md"), HasSubstr("| 3 | – |"));
  EXPECT_THAT(ReadFile(dir_ + "/out/results.md"), HasSubstr("invalid: model.num_heads: d_model (16) must be"));
}

// Runs with train.probe_every: probes.csv holds every probe of every run,
// equal to the run directories' metrics.json, rebuilt identically by
// --report_only; results.md tabulates the ones report_probes selects.
TEST_F(GridEndToEnd, ProbesReachTheReport) {
  Write("grid.pbtxt",
        "base_spec: \"base.pbtxt\"\nset: \"train.probe_every=10\"\n"
        "axis { field: \"model.norm.placement\" values: [\"pre_ln\", \"post_ln\"] label: \"placement\" }\n"
        "seeds: [0, 1]\noutput_dir: \"out\"\nreport_probes: [\"grad_norm/\", \"logits/max\", \"no_such/\"]\n");
  RunResult r = Run("grid.pbtxt --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = ReadFile(dir_ + "/out/probes.csv");
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "cell,seed,state,probe,first,last,max,mean,first_step,last_step,count");
  auto spec = ParseGridFile(dir_ + "/grid.pbtxt");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto grid = ExpandGrid(*spec, dir_ + "/grid.pbtxt", dir_);
  ASSERT_TRUE(grid.ok()) << grid.status();
  size_t probes = 0, line = 1;
  for (const GridCell& cell : grid->cells) {
    for (const GridRun& run : cell.runs) {
      auto metrics = ReadMetrics(run.run_dir);
      ASSERT_TRUE(metrics.ok()) << metrics.status();
      ASSERT_GT(metrics->probes_size(), 0);
      for (const RunMetrics::Probe& p : metrics->probes()) {
        ASSERT_LT(line, lines.size());
        std::vector<std::string> f = absl::StrSplit(lines[line++], ',');
        ASSERT_EQ(f.size(), 11u);
        EXPECT_EQ(f[0], cell.label);
        EXPECT_EQ(f[1], std::to_string(run.seed));
        EXPECT_EQ(f[2], "finished");
        EXPECT_EQ(f[3], p.name());
        const std::vector<double> want = {p.first(), p.last(), p.max(), p.mean()};
        for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(std::strtod(f[4 + i].c_str(), nullptr), want[i]) << f[3];
        EXPECT_EQ(f[8], "0");  // step 0, the initialisation; then 10 and the last, 19
        EXPECT_EQ(f[9], "19");
        EXPECT_EQ(f[10], "3");
        EXPECT_EQ(p.count(), 3);
        ++probes;
      }
    }
  }
  EXPECT_EQ(lines.size(), 1 + probes);
  EXPECT_THAT(csv, HasSubstr(",grad_norm/encoder.layers.0,"));
  const std::string md = ReadFile(dir_ + "/out/results.md");
  EXPECT_THAT(md, HasSubstr("## Probes (exploratory)"));
  EXPECT_THAT(md, HasSubstr("| placement | probe | seeds | first | max |"));
  EXPECT_THAT(md, HasSubstr("| post_ln | grad_norm/encoder.layers.0 | 2 | "));
  EXPECT_THAT(md, HasSubstr("| pre_ln | logits/max | 2 | "));
  EXPECT_THAT(md, Not(HasSubstr("| attention_entropy/")));
  EXPECT_THAT(md, HasSubstr("`report_probes` entry `no_such/` matches no probe of any finished run"));
  fs::remove(dir_ + "/out/probes.csv");
  RunResult report = Run("grid.pbtxt --report_only");
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_EQ(ReadFile(dir_ + "/out/probes.csv"), csv);
}

TEST_F(GridEndToEnd, GridMistakesAreErrors) {
  Write("typo.pbtxt", "base_spec: \"base.pbtxt\"\naxis { field: \"seed\" valuez: [\"1\"] }\n");
  RunResult typo = Run("typo.pbtxt");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.output, HasSubstr("typo.pbtxt:2:"));
  EXPECT_THAT(typo.output, HasSubstr("did you mean \"values\"?"));
  Write("g.pbtxt", Grid("\"1e-3\""));
  RunResult flag = Run("g.pbtxt --jobs 0");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_THAT(flag.output, HasSubstr("--jobs: '0' is not a number of processes >= 1"));
  Write("metric.pbtxt", Grid("\"1e-3\"") + "main_metric: \"acc\"\n");
  EXPECT_THAT(Run("metric.pbtxt").output, HasSubstr("main_metric: 'acc' is not a metric; metrics: token_accuracy"));
  EXPECT_TRUE(RunDirs().empty());
}

}  // namespace
}  // namespace tvlab
