// The foundation's acceptance experiment (seed lesson 000): the encoder-only
// Transformer learns to sort 8 digits, and fails without positions, as the
// seed reports. Runs the real binary on the shipped configs, full length.

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

TEST(SortDigits, ReproducesTheSeedWithSinusoidalPositions) {
  std::string dir = TempDir() + "/sort";
  RunResult r = RunBinary(Runfile("configs/sort_digits.pbtxt") + " --output_dir " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string metrics = ReadFile(dir + "/metrics.json");
  // The seed reports 0.976 and 0.845.
  EXPECT_GE(JsonNumber(metrics, "token_accuracy"), 0.95) << metrics;
  EXPECT_GE(JsonNumber(metrics, "sequence_accuracy"), 0.75) << metrics;
  EXPECT_GT(JsonNumber(metrics, "parameters"), 60000);
  EXPECT_GT(JsonNumber(metrics, "train_seconds"), 0);
  EXPECT_GT(JsonNumber(metrics, "final_train_loss"), 0);
  // Evaluated on 1000 held-out inputs, none of which the run trained on.
  EXPECT_EQ(JsonNumber(metrics, "eval_examples"), 1000) << metrics;
  EXPECT_EQ(JsonNumber(metrics, "eval_train_overlap"), 0) << metrics;
  // Metrics of other task kinds are absent, not 0.
  for (const char* absent : {"\"exact_match\"", "\"bleu\"", "\"perplexity\"", "\"accuracy\""})
    EXPECT_EQ(metrics.find(absent), std::string::npos) << absent << " in " << metrics;
  EXPECT_NE(ReadFile(dir + "/spec.resolved.pbtxt").find("dropout: 0.1"), std::string::npos);
  std::string log = ReadFile(dir + "/train_log.csv");
  EXPECT_EQ(log.rfind("step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec,", 0), 0u) << log.substr(0, 80);
  EXPECT_NE(log.find("\n1000,"), std::string::npos);
  EXPECT_NE(r.output.find("step  1000/1001"), std::string::npos) << r.output;
}

TEST(SortDigits, FailsWithoutPositionsAsTheSeedShows) {
  std::string dir = TempDir() + "/nopos";
  RunResult r = RunBinary(Runfile("configs/sort_digits_no_position.pbtxt") + " --output_dir " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string metrics = ReadFile(dir + "/metrics.json");
  // The seed reports loss ~1.71, token accuracy 0.300, sequence accuracy 0.000.
  EXPECT_LE(JsonNumber(metrics, "token_accuracy"), 0.40) << metrics;
  EXPECT_LE(JsonNumber(metrics, "sequence_accuracy"), 0.02) << metrics;
  EXPECT_GT(JsonNumber(metrics, "final_train_loss"), 1.3) << metrics;
}

}  // namespace
}  // namespace tvlab
