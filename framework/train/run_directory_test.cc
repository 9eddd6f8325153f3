// RunDirectory: the train_log.csv format, truncation on resume, atomic files.

#include "framework/train/run_directory.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/io/testing/fault_injection_file_system.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string NewDir(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name + "/nested";
}

constexpr char kHeader[] =
    "step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec,eval_loss,eval_token_accuracy\n";

TrainLogRow Row(int64_t step) {
  TrainLogRow row;
  row.step = step;
  row.loss = 2.5;
  row.lr = 0.001f;
  row.grad_norm = 0.75;
  row.tokens_per_sec = 1234.56;
  row.elapsed_sec = 1.5;
  return row;
}

TEST(RunDirectory, WritesTheLogHeaderAndRows) {
  RunDirectory dir(NewDir("log"));
  ASSERT_TRUE(dir.Create().ok());
  ASSERT_TRUE(dir.StartLog().ok());
  ASSERT_TRUE(dir.AppendLogRow(Row(0)).ok());
  TrainLogRow evaluated = Row(1);
  evaluated.has_eval = true;
  evaluated.eval_loss = 1.25;
  evaluated.eval_token_accuracy = 0.5;
  ASSERT_TRUE(dir.AppendLogRow(evaluated).ok());
  EXPECT_EQ(Read(dir.path() + "/train_log.csv"),
            std::string(kHeader) +
                "0,2.500000,0.001,0.750000,1234.6,1.500,,\n"
                "1,2.500000,0.001,0.750000,1234.6,1.500,1.250000,0.500000\n");
}

TEST(RunDirectory, ContinueLogDropsTheStepsToRedo) {
  const std::string path = NewDir("resume");
  {
    RunDirectory first(path);
    ASSERT_TRUE(first.Create().ok());
    ASSERT_TRUE(first.StartLog().ok());
    for (int64_t step = 0; step < 5; ++step) ASSERT_TRUE(first.AppendLogRow(Row(step)).ok());
  }
  RunDirectory resumed(path);
  ASSERT_TRUE(resumed.ContinueLog(3).ok());
  ASSERT_TRUE(resumed.AppendLogRow(Row(3)).ok());
  EXPECT_EQ(Read(path + "/train_log.csv"), std::string(kHeader) +
                                               "0,2.500000,0.001,0.750000,1234.6,1.500,,\n"
                                               "1,2.500000,0.001,0.750000,1234.6,1.500,,\n"
                                               "2,2.500000,0.001,0.750000,1234.6,1.500,,\n"
                                               "3,2.500000,0.001,0.750000,1234.6,1.500,,\n");
}

TEST(RunDirectory, ADamagedLogRowIsACleanErrorNamingTheLine) {
  const std::string path = NewDir("damaged");
  {
    RunDirectory first(path);
    ASSERT_TRUE(first.Create().ok());
    ASSERT_TRUE(first.StartLog().ok());
    ASSERT_TRUE(first.AppendLogRow(Row(0)).ok());
  }
  std::ofstream(path + "/train_log.csv", std::ios::app) << "garbage,1,2\n";
  RunDirectory resumed(path);
  absl::Status s = resumed.ContinueLog(1);  // used to throw std::invalid_argument (abort)
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(s.message()).find("train_log.csv:3: the row does not start with a step number"),
            std::string::npos)
      << s;
}

TEST(RunDirectory, WritesMetricsAsJsonWithoutTemporaryFiles) {
  RunDirectory dir(NewDir("metrics"));
  ASSERT_TRUE(dir.Create().ok());
  RunMetrics metrics;
  metrics.set_token_accuracy(0.5);
  ASSERT_TRUE(dir.WriteMetrics(metrics).ok());
  const std::string json = Read(dir.path() + "/metrics.json");
  EXPECT_NE(json.find("\"token_accuracy\": 0.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"steps\": "), std::string::npos) << json;  // zero fields too
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/metrics.json.tmp"));
}

// Every appended log row is checked: a full disk is an error, not a lost row.
TEST(RunDirectory, FailedLogAppendIsAnError) {
  FaultInjectionFileSystem faulty(DefaultFileSystem(), {FaultOp::kAppend, "train_log.csv", 2, ENOSPC});
  RunDirectory dir(NewDir("log_enospc"), &faulty);
  ASSERT_TRUE(dir.Create().ok());
  ASSERT_TRUE(dir.StartLog().ok());  // the header: append 1
  absl::Status s = dir.AppendLogRow(Row(0));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(std::string(s.message()).find("train_log.csv': No space left on device"), std::string::npos) << s;
}

// A full disk while metrics.json is written leaves no metrics.json at all
// (it used to leave an empty one that counted as a finished run).
TEST(RunDirectory, FailedMetricsWriteLeavesNoMetricsFile) {
  for (FaultOp op : {FaultOp::kAppend, FaultOp::kSync, FaultOp::kClose, FaultOp::kRename}) {
    FaultInjectionFileSystem faulty(DefaultFileSystem(), {op, "metrics.json", 1, ENOSPC});
    RunDirectory dir(NewDir("metrics_enospc"), &faulty);
    ASSERT_TRUE(dir.Create().ok());
    RunMetrics metrics;
    metrics.set_token_accuracy(0.5);
    EXPECT_FALSE(dir.WriteMetrics(metrics).ok());
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/metrics.json"));
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/metrics.json.tmp"));
  }
}

TEST(RunDirectory, CreateNamesTheFileInTheWay) {
  const std::string base = std::string(std::getenv("TEST_TMPDIR")) + "/file_in_the_way";
  std::filesystem::remove_all(base);
  std::ofstream(base) << "x";
  RunDirectory dir(base + "/run");
  absl::Status s = dir.Create();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("'" + base + "' exists and is not a directory"), std::string::npos)
      << s;
}

TEST(RunDirectory, MetricsThatDoNotApplyAreAbsentAndMeasuredZerosArePresent) {
  RunDirectory dir(NewDir("absent_metrics"));
  ASSERT_TRUE(dir.Create().ok());
  RunMetrics metrics;  // a tagging run: no perplexity, exact match or BLEU
  metrics.set_token_accuracy(0.5);
  metrics.set_eval_train_overlap(0);  // measured: none
  ASSERT_TRUE(dir.WriteMetrics(metrics).ok());
  const std::string json = Read(dir.path() + "/metrics.json");
  for (const char* absent : {"\"bleu\"", "\"exact_match\"", "\"perplexity\"", "\"perplexity_per_byte\"",
                             "\"bits_per_byte\"", "\"unigram_perplexity\"", "\"accuracy\"",
                             "\"decoded_examples\""})
    EXPECT_EQ(json.find(absent), std::string::npos) << absent << " in " << json;
  EXPECT_NE(json.find("\"eval_train_overlap\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"token_accuracy\": 0.5"), std::string::npos) << json;
}

}  // namespace
}  // namespace tvlab
