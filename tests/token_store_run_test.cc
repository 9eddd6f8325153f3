// The token_store task end to end through the run binary, on the licence
// texts' stores that //configs:licences_store and //configs:more_licences_store
// prepare, for one store and for a mixture of the two (weights 3 : 1): two
// runs with the same seed read the same tokens (equal losses, bit for bit);
// a run killed after step 14 and resumed reads exactly what the
// uninterrupted run read (equal losses and weights, bit for bit); two
// data-parallel ranks under mpirun follow the one-process run (each rank
// takes its rows of the same global batch; losses within 1e-6, the
// all-reduce's summation order aside; with document_mask too), skipped
// where mpirun is missing; document_mask changes the losses of the same
// windows;
// metrics.json reports bits per byte, the epochs and, for the mixture, each
// source's samples, tokens and epochs; and with eval.context_targets every
// evaluation context reports the same windows and scored tokens.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

// The task options of one store, or of the mixture.
std::string OneStore() {
  return "path: \"" + Runfile("configs/data/licences_store") + "\"";
}
std::string Mixture() {
  return "sources { path: \"" + Runfile("configs/data/licences_store") + "\" weight: 3 } sources { path: \"" +
         Runfile("configs/data/more_licences_store") + "\" weight: 1 }";
}

std::string SpecFile(const std::string& store_options) {
  const std::string path = TempDir() + "/token_store" + std::to_string(std::hash<std::string>()(store_options)) +
                           ".pbtxt";
  std::ofstream(path)
      << "name: \"token_store\"\nmodel { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 "
         "d_ff: 32 dropout: 0.1 position { plugin: \"rope\" } }\n"
         "task { plugin: \"token_store\" options { [type.googleapis.com/tvlab.TokenStoreOptions] { "
      << store_options
      << " context_length: 32 } } }\n"
         "train { steps: 30 batch_size: 8 log_every: 1 checkpoint_every: 10 }\n"
         "eval { examples: 16 }\nruntime { threads: 1 }\n";
  return path;
}

// Same seed, same tokens; killed and resumed, the tokens of the
// uninterrupted run. Returns the uninterrupted run's metrics.json.
std::string CheckSameSeedAndResume(const std::string& store_options, const std::string& label) {
  const std::string whole = TempDir() + "/whole_" + label, again = TempDir() + "/again_" + label,
                    broken = TempDir() + "/broken_" + label;
  RunResult a = RunBinary(SpecFile(store_options) + " --output_dir " + whole);
  EXPECT_EQ(a.exit_code, 0) << a.output;
  RunResult b = RunBinary(SpecFile(store_options) + " --output_dir " + again);
  EXPECT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(TrainLogLosses(again), TrainLogLosses(whole));
  RunResult killed = RunProgram("tests/run_with_crash_hook",
                                SpecFile(store_options) + " --output_dir " + broken + " --crash_after_step 14");
  EXPECT_EQ(killed.exit_code, 137) << killed.output;
  RunResult resumed = RunBinary("--resume " + broken);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(TrainLogLosses(broken), TrainLogLosses(whole));
  EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(whole + "/model.safetensors"));
  return ReadFile(whole + "/metrics.json");
}

TEST(TokenStoreRun, SameSeedSameTokensAndResumeReadsWhatTheUninterruptedRunRead) {
  const std::string metrics = CheckSameSeedAndResume(OneStore(), "one");
  // 240 windows of 32 ids of a train stream of about 77,000: a tenth of an epoch.
  EXPECT_GT(JsonNumber(metrics, "epochs"), 0.05);
  EXPECT_LT(JsonNumber(metrics, "epochs"), 1.0);
  EXPECT_GT(JsonNumber(metrics, "bits_per_byte"), 0.0);
  EXPECT_EQ(metrics.find("\"share\""), std::string::npos);  // train_sources: mixtures only
}

TEST(TokenStoreRun, AMixtureResumesExactlyAndReportsEverySource) {
  const std::string metrics = CheckSameSeedAndResume(Mixture(), "mixture");
  // 240 samples in a partial block of 1,024: about 180 and 60 of them.
  const size_t second = metrics.find("more_licences_store");
  ASSERT_NE(second, std::string::npos) << metrics;
  const double first_samples = JsonNumber(metrics, "samples");
  const double second_samples = JsonNumber(metrics.substr(second), "samples");
  EXPECT_EQ(first_samples + second_samples, 240);
  EXPECT_NEAR(first_samples / 240, 0.75, 0.1);
  EXPECT_EQ(JsonNumber(metrics.substr(second), "tokens"), second_samples * 32);
  EXPECT_GT(JsonNumber(metrics.substr(second), "epochs"), 0.0);
  EXPECT_GT(JsonNumber(metrics, "bits_per_byte"), 0.0);
}

RunResult Shell(const std::string& command) {
  RunResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The loss column of train_log.csv, by row.
std::vector<double> LossColumn(const std::string& dir) {
  std::stringstream rows(TrainLogLosses(dir));
  std::string line;
  std::getline(rows, line);  // header
  std::vector<double> losses;
  while (std::getline(rows, line)) losses.push_back(std::stod(line.substr(line.find(',') + 1)));
  return losses;
}

// Two ranks under mpirun follow the one-process loss curve.
void CheckTwoRanks(const std::string& store_options, const std::string& label) {
  const std::string one = TempDir() + "/one_process_" + label, two = TempDir() + "/two_ranks_" + label;
  RunResult a = RunBinary(SpecFile(store_options) + " --output_dir " + one);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = Shell(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --mca btl self,vader "
      "-np 2 " + Runfile("experiments/run") + " " + SpecFile(store_options) + " --output_dir " + two);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::vector<double> losses_one = LossColumn(one), losses_two = LossColumn(two);
  ASSERT_EQ(losses_one.size(), 30u);
  ASSERT_EQ(losses_two.size(), losses_one.size());
  for (size_t i = 0; i < losses_one.size(); ++i)
    EXPECT_LE(std::fabs(losses_two[i] - losses_one[i]), 1e-6 * std::fabs(losses_one[i])) << "row " << i;
}

TEST(TokenStoreRun, TwoRanksReadTheRowsOfTheOneProcessBatch) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun not found (Open MPI: bash tools/setup.sh); skipped";
  CheckTwoRanks(OneStore(), "one");
  CheckTwoRanks(Mixture(), "mixture");
  CheckTwoRanks(OneStore() + " document_mask: true", "documents");  // documents sharded with rows
}

// document_mask reaches the model through the run binary: the same windows
// (same seed) give another loss curve once attention stops at documents.
TEST(TokenStoreRun, DocumentMaskChangesTheLossesOfTheSameWindows) {
  const std::string open = TempDir() + "/open_documents", masked = TempDir() + "/masked_documents";
  RunResult a = RunBinary(SpecFile(OneStore()) + " --output_dir " + open);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = RunBinary(SpecFile(OneStore() + " document_mask: true") + " --output_dir " + masked);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::vector<double> open_losses = LossColumn(open), masked_losses = LossColumn(masked);
  ASSERT_EQ(open_losses.size(), masked_losses.size());
  EXPECT_NE(open_losses, masked_losses);
}

// eval.context_targets through the run binary: every entry of
// context_evals has the windows of the longest length (at most
// eval.examples) and windows x 8 scored tokens.
TEST(TokenStoreRun, ContextTargetsScoreTheSameTokensAtEveryContext) {
  const std::string spec = TempDir() + "/context_targets.pbtxt", dir = TempDir() + "/context_targets";
  std::ofstream(spec) << "name: \"context_targets\"\nmodel { family: DECODER_ONLY d_model: 16 num_layers: 1 "
                         "num_heads: 2 d_ff: 32 position { plugin: \"rope\" } }\n"
                         "task { plugin: \"token_store\" options { [type.googleapis.com/tvlab.TokenStoreOptions] { "
                      << OneStore()
                      << " context_length: 32 } } }\n"
                         "train { steps: 3 batch_size: 4 }\n"
                         "eval { examples: 16 context_lengths: [8, 32, 64] context_targets: 8 }\n"
                         "runtime { threads: 1 }\n";
  RunResult run = RunBinary(spec + " --output_dir " + dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string metrics = ReadFile(dir + "/metrics.json");
  const size_t evals = metrics.find("\"context_evals\"");
  ASSERT_NE(evals, std::string::npos) << metrics;
  std::vector<double> lengths, examples, scored;
  for (size_t at = metrics.find("\"context_length\"", evals); at != std::string::npos;
       at = metrics.find("\"context_length\"", at + 1)) {
    const std::string entry = metrics.substr(at, metrics.find('}', at) - at);
    lengths.push_back(JsonNumber(entry, "context_length"));
    examples.push_back(JsonNumber(entry, "eval_examples"));
    scored.push_back(JsonNumber(entry, "scored_tokens"));
  }
  ASSERT_EQ(lengths, (std::vector<double>{8, 32, 64})) << metrics;
  EXPECT_EQ(examples, std::vector<double>(3, 16.0)) << metrics;  // the store holds 16 windows of 64
  EXPECT_EQ(scored, std::vector<double>(3, 16.0 * 8)) << metrics;
}

}  // namespace
}  // namespace tvlab
