// Failing writes, injected through the filesystem interface
// (//tests:run_with_faults, framework/io/testing/): a full disk or a crash
// while metrics.json or the grid's results are written gives a non-zero exit
// and leaves the run unfinished, so --resume or the grid redoes it; a
// metrics.json that is empty or does not parse never counts as finished.

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char kSpec[] =
    "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
    "task { plugin: \"sort_digits\" }\ntrain { steps: 6 checkpoint_every: 3 }\neval { examples: 20 }\n";

const char kGrid[] =
    "base_spec: \"spec.pbtxt\"\n"
    "axis { field: \"model.position.plugin\" values: [\"none\", \"sinusoidal\"] label: \"position\" }\n"
    "output_dir: \"out\"\n";

class WriteFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/spec.pbtxt") << kSpec;
    std::ofstream(dir_ + "/grid.pbtxt") << kGrid;
  }
  RunResult Faulty(const std::string& args) { return RunProgram("tests/run_with_faults", args); }
  std::vector<std::string> GridRunDirs() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_ + "/out/runs")) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

TEST_F(WriteFaults, FullDiskWritingMetricsFailsAndResumeFinishes) {
  const std::string whole = dir_ + "/whole", run = dir_ + "/run";
  ASSERT_EQ(RunBinary(dir_ + "/spec.pbtxt --output_dir " + whole).exit_code, 0);

  RunResult r = Faulty(dir_ + "/spec.pbtxt --output_dir " + run +
                       " --fault_op append --fault_path metrics.json --fault_error ENOSPC");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: cannot write (injected fault) '" + run +
                                  "/metrics.json.tmp': No space left on device; free some disk space"));
  EXPECT_FALSE(fs::exists(run + "/metrics.json"));
  EXPECT_FALSE(fs::exists(run + "/metrics.json.tmp"));

  RunResult resumed = RunBinary("--resume " + run);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(JsonNumber(ReadFile(run + "/metrics.json"), "token_accuracy"),
            JsonNumber(ReadFile(whole + "/metrics.json"), "token_accuracy"));
  EXPECT_EQ(ReadFile(run + "/model.safetensors"), ReadFile(whole + "/model.safetensors"));
}

// TensorBoard's event file is written through the same filesystem seam and
// treated as train_log.csv is: a failed write stops the run with an error
// naming the file (the curves would otherwise be silently incomplete), the
// run is unfinished, and --resume finishes it (in a new event file).
TEST_F(WriteFaults, FullDiskWritingTheEventFileFailsAndResumeFinishes) {
  const std::string run = dir_ + "/run";
  // Append 1 is the file_version record, 2 the log row of the first step, 3
  // that of the last one (after the checkpoint of step 3).
  RunResult r = Faulty(dir_ + "/spec.pbtxt --output_dir " + run +
                       " --fault_op append --fault_path tfevents --fault_nth 3 --fault_error ENOSPC");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: TensorBoard event file: cannot write (injected fault) '" + run +
                                  "/events.out.tfevents."));
  EXPECT_THAT(r.output, HasSubstr("No space left on device; free some disk space"));
  EXPECT_FALSE(fs::exists(run + "/metrics.json"));

  RunResult resumed = RunBinary("--resume " + run);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_GT(JsonNumber(ReadFile(run + "/metrics.json"), "parameters"), 0);
  int event_files = 0;
  for (const auto& e : fs::directory_iterator(run))
    event_files += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  EXPECT_EQ(event_files, 2);
}

// A crash between writing metrics.json's temporary file and renaming it.
TEST_F(WriteFaults, CrashWritingMetricsLeavesTheRunUnfinished) {
  const std::string run = dir_ + "/run";
  RunResult r = Faulty(dir_ + "/spec.pbtxt --output_dir " + run +
                       " --fault_op rename --fault_path metrics.json --fault_error crash");
  EXPECT_EQ(r.exit_code, 137) << r.output;
  EXPECT_FALSE(fs::exists(run + "/metrics.json"));
  RunResult resumed = RunBinary("--resume " + run);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_GT(JsonNumber(ReadFile(run + "/metrics.json"), "parameters"), 0);
}

// What a full disk used to leave: an empty or cut-off metrics.json. It is not
// a finished run: --resume redoes the end of it.
TEST_F(WriteFaults, DamagedMetricsIsNotAFinishedRun) {
  const std::string run = dir_ + "/run";
  ASSERT_EQ(RunBinary(dir_ + "/spec.pbtxt --output_dir " + run).exit_code, 0);
  const std::string good = ReadFile(run + "/metrics.json");
  for (const std::string& damaged : {std::string(""), good.substr(0, good.size() / 2)}) {
    std::ofstream(run + "/metrics.json", std::ios::trunc) << damaged;
    RunResult resumed = RunBinary("--resume " + run);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    for (const char* key : {"token_accuracy", "eval_loss", "final_train_loss", "parameters"})
      EXPECT_EQ(JsonNumber(ReadFile(run + "/metrics.json"), key), JsonNumber(good, key)) << key;
  }
  RunResult again = RunBinary("--resume " + run);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.output, HasSubstr("nothing to resume"));
}

// A failure after the run directory was made but before the first step (here
// train_log.csv cannot be opened) removes the directory this run made: nothing
// half-made is left that looks like a run.
TEST_F(WriteFaults, FailureBeforeTrainingRemovesTheNewRunDirectory) {
  const std::string run = dir_ + "/new/run";
  RunResult r = Faulty(dir_ + "/spec.pbtxt --output_dir " + run +
                       " --fault_op open --fault_path train_log.csv --fault_error EIO");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("train_log.csv.tmp': Input/output error"));
  EXPECT_FALSE(fs::exists(run));
  // A directory that existed before is left as it was.
  fs::create_directories(run);
  std::ofstream(run + "/notes.txt") << "mine\n";
  EXPECT_EQ(Faulty(dir_ + "/spec.pbtxt --output_dir " + run +
                   " --fault_op open --fault_path train_log.csv --fault_error EIO").exit_code, 1);
  EXPECT_EQ(ReadFile(run + "/notes.txt"), "mine\n");
}

TEST_F(WriteFaults, FullDiskWritingGridResultsFailsAndTheNextInvocationWritesThem) {
  RunResult r = Faulty(dir_ + "/grid.pbtxt --fault_op append --fault_path results.md --fault_error ENOSPC");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("results.md.tmp': No space left on device"));
  EXPECT_FALSE(fs::exists(dir_ + "/out/results.md"));
  ASSERT_EQ(GridRunDirs().size(), 2u);
  for (const std::string& d : GridRunDirs()) EXPECT_TRUE(fs::exists(d + "/metrics.json")) << d;

  RunResult again = RunBinary(dir_ + "/grid.pbtxt");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("2 finished (skipped)"));
  EXPECT_TRUE(fs::exists(dir_ + "/out/results.md"));
}

// A cell whose metrics.json does not parse is failed: the grid exits 1 naming
// it, and --retry_failed reruns it.
TEST_F(WriteFaults, GridWithAnUnreadableCellExitsNonZeroAndRetriesIt) {
  ASSERT_EQ(RunBinary(dir_ + "/grid.pbtxt").exit_code, 0);
  const std::string damaged = GridRunDirs()[0];
  std::ofstream(damaged + "/metrics.json", std::ios::trunc) << "";

  RunResult kept = RunBinary(dir_ + "/grid.pbtxt");
  EXPECT_EQ(kept.exit_code, 1) << kept.output;
  EXPECT_THAT(kept.output, HasSubstr("1 failed earlier (kept; --retry_failed reruns it)"));
  EXPECT_THAT(kept.output, HasSubstr("error: 1 run(s) did not finish"));
  EXPECT_THAT(kept.output, HasSubstr("seed 0: failed (" + damaged + ")"));
  EXPECT_THAT(ReadFile(dir_ + "/out/results.md"), HasSubstr("failed"));

  RunResult retried = RunBinary(dir_ + "/grid.pbtxt --retry_failed");
  EXPECT_EQ(retried.exit_code, 0) << retried.output;
  EXPECT_THAT(retried.output, HasSubstr("1 to run"));
  EXPECT_GT(JsonNumber(ReadFile(damaged + "/metrics.json"), "parameters"), 0);
}

}  // namespace
}  // namespace tvlab
