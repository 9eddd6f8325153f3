// Data-parallel training under a real `mpirun -np 2` (Open MPI from Debian;
// docs/distributed.md): two ranks on half batches follow the one-process
// run's loss curve (<= 1e-6 relative) with dropout on (each rank draws the
// one-process masks of its rows) to the same final metrics, evaluated
// sharded over the ranks (an evaluation set and a decoding set that do not
// split evenly; exact match and BLEU summed from per-rank statistics); a
// rank killed with SIGKILL stops the job with a clear error, leaves whole
// files, and --resume (again on 2 ranks) finishes bit for bit like the run
// never interrupted; a rank stopped with SIGSTOP is named by the other's
// collective-timeout watchdog, which ends the job, and --resume then works;
// bad launches (a batch that does not split, ranks with different specs or
// programs) are refused with errors naming the cause; on the simulated
// device backend too.
//
// Skipped, saying so, where mpirun is missing (a --config=nompi machine).

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

// Dropout on: rank r draws the one-process masks of its rows. 203
// evaluation examples in batches of 50: 5 batches, 2 on rank 0 and 3 on
// rank 1 (the last one short); a periodic evaluation every 10 steps.
const char kSpec[] =
    "name: \"data_parallel\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 "
    "dropout: 0.1 }\ntask { plugin: \"sort_digits\" }\n"
    "train { steps: 30 batch_size: 16 log_every: 1 checkpoint_every: 10 eval_every: 10 grad_accumulation: 2 "
    "clip_grad_norm: 1.0 optimizer { adamw { lr: 1e-2 } } lr_schedule { kind: WARMUP_COSINE warmup_steps: 5 } }\n"
    "eval { examples: 203 batch_size: 50 }\nruntime { threads: 1 }\n";

bool HaveMpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

std::string SpecFile() {
  std::string path = TempDir() + "/data_parallel.pbtxt";
  std::ofstream(path) << kSpec;
  return path;
}

// Open MPI refuses root unless told (CI and containers run as root); two
// ranks on a machine with fewer free cores need --oversubscribe. The shared
// memory transport only: the test machine has no network to speak of.
std::string Mpirun(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe "
         "--mca btl self,vader -np " + std::to_string(ranks) + " ";
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

struct LogRow {
  int step;
  double loss, grad_norm;
  std::string eval_loss, eval_token_accuracy;  // empty on rows without an evaluation
};

std::vector<LogRow> Log(const std::string& dir) {
  std::ifstream in(dir + "/train_log.csv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<LogRow> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string step, loss, lr, grad_norm, tokens_per_sec, elapsed, eval_loss, eval_accuracy;
    std::getline(fields, step, ',');
    std::getline(fields, loss, ',');
    std::getline(fields, lr, ',');
    std::getline(fields, grad_norm, ',');
    std::getline(fields, tokens_per_sec, ',');
    std::getline(fields, elapsed, ',');
    std::getline(fields, eval_loss, ',');
    std::getline(fields, eval_accuracy, ',');
    rows.push_back({std::stoi(step), std::stod(loss), std::stod(grad_norm), eval_loss, eval_accuracy});
  }
  return rows;
}

double Relative(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

class DataParallel : public ::testing::Test {
 protected:
  // One process and an uninterrupted 2-rank run, shared by the tests.
  static void SetUpTestSuite() {
    if (!HaveMpirun()) return;
    one_ = TempDir() + "/one_process";
    two_ = TempDir() + "/two_ranks";
    one_result_ = new RunResult(RunBinary(SpecFile() + " --output_dir " + one_));
    two_result_ = new RunResult(
        Shell(Mpirun(2) + Runfile("experiments/run") + " " + SpecFile() + " --output_dir " + two_));
  }
  void SetUp() override {
    if (!HaveMpirun()) GTEST_SKIP() << "mpirun not found (Open MPI: bash tools/setup.sh); skipped";
  }
  static std::string one_, two_;
  static RunResult* one_result_;
  static RunResult* two_result_;
};
std::string DataParallel::one_, DataParallel::two_;
RunResult* DataParallel::one_result_ = nullptr;
RunResult* DataParallel::two_result_ = nullptr;

TEST_F(DataParallel, TwoRanksOnHalfBatchesEqualOneProcessOnTheWholeBatch) {
  ASSERT_EQ(one_result_->exit_code, 0) << one_result_->output;
  ASSERT_EQ(two_result_->exit_code, 0) << two_result_->output;
  EXPECT_NE(two_result_->output.find("2 data-parallel ranks"), std::string::npos) << two_result_->output;
  // Rank 0 alone reports: one summary on stdout, not two.
  const std::string summary = "run directory: ";
  const size_t first = two_result_->output.find(summary);
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(two_result_->output.find(summary, first + 1), std::string::npos) << two_result_->output;

  const std::vector<LogRow> one = Log(one_), two = Log(two_);
  ASSERT_EQ(one.size(), 30u);
  ASSERT_EQ(two.size(), one.size());
  double worst = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(two[i].step, one[i].step);
    EXPECT_LE(Relative(two[i].loss, one[i].loss), 1e-6) << "step " << one[i].step;
    worst = std::max(worst, Relative(two[i].loss, one[i].loss));
  }
  std::cout << "largest relative loss difference over " << one.size() << " steps: " << worst << "\n";
  // Training moved: the curve compared is not a flat line.
  EXPECT_LT(one.back().loss, one.front().loss * 0.9);
  // The periodic evaluations (sharded too) agree.
  int evaluations = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(two[i].eval_loss.empty(), one[i].eval_loss.empty()) << "step " << one[i].step;
    if (one[i].eval_loss.empty() || two[i].eval_loss.empty()) continue;
    ++evaluations;
    EXPECT_LE(Relative(std::stod(two[i].eval_loss), std::stod(one[i].eval_loss)), 1e-6) << "step " << one[i].step;
    EXPECT_EQ(two[i].eval_token_accuracy, one[i].eval_token_accuracy) << "step " << one[i].step;
  }
  EXPECT_EQ(evaluations, 3);
  // The final evaluation, sharded over the ranks: the one-process metrics.
  const std::string m1 = ReadFile(one_ + "/metrics.json"), m2 = ReadFile(two_ + "/metrics.json");
  for (const char* metric : {"eval_loss", "token_accuracy", "sequence_accuracy"})
    EXPECT_LE(Relative(JsonNumber(m2, metric), JsonNumber(m1, metric)), 1e-6) << metric;
  EXPECT_GT(JsonNumber(m1, "token_accuracy"), 0.2);  // learned something: not a trivial 0
  EXPECT_EQ(JsonNumber(m2, "eval_examples"), 203);
  EXPECT_EQ(JsonNumber(m1, "eval_examples"), 203);
  EXPECT_EQ(JsonNumber(m2, "data_parallel_ranks"), 2);
  EXPECT_EQ(JsonNumber(m1, "data_parallel_ranks"), -1e300);  // absent for one process
  EXPECT_GT(JsonNumber(m2, "allreduce_seconds"), 0);
  EXPECT_GT(JsonNumber(m2, "backward_seconds"), 0);
  EXPECT_EQ(JsonNumber(m1, "backward_seconds"), -1e300);  // absent for one process
}

TEST_F(DataParallel, RankKilledWithSigkillStopsTheJobAndResumeEqualsTheUninterruptedRun) {
  ASSERT_EQ(two_result_->exit_code, 0) << two_result_->output;
  const std::string broken = TempDir() + "/killed";
  // Rank 1 is SIGKILLed right after step 14 (checkpoint of step 10 on disk).
  RunResult killed = Shell(Mpirun(2) + Runfile("tests/run_with_crash_hook") + " " + SpecFile() +
                           " --output_dir " + broken + " --crash_after_step 14 --crash_rank 1 --crash_signal 9");
  EXPECT_NE(killed.exit_code, 0) << killed.output;
  // mpirun names the dead rank and the signal; rank 0 says what to do.
  EXPECT_NE(killed.output.find("signal 9"), std::string::npos) << killed.output;
  EXPECT_NE(killed.output.find("continue from its last checkpoint with"), std::string::npos) << killed.output;
  EXPECT_FALSE(std::filesystem::exists(broken + "/metrics.json"));
  EXPECT_EQ(ReadFile(broken + "/checkpoints/latest").substr(0, 12), "step_0000010");

  RunResult resumed = Shell(Mpirun(2) + Runfile("experiments/run") + " --resume " + broken);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 10"), std::string::npos) << resumed.output;
  const std::vector<LogRow> whole = Log(two_), again = Log(broken);
  ASSERT_EQ(again.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(again[i].loss, whole[i].loss) << "step " << whole[i].step;  // bit for bit (same ranks)
    EXPECT_EQ(again[i].grad_norm, whole[i].grad_norm) << "step " << whole[i].step;
  }
  EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(two_ + "/model.safetensors"));
}

TEST_F(DataParallel, RankStoppedWithSigstopIsNamedByTheWatchdogAndTheJobEndsThenResumes) {
  ASSERT_EQ(two_result_->exit_code, 0) << two_result_->output;
  const std::string hung = TempDir() + "/hung";
  // Rank 1 stops itself (SIGSTOP: alive, never arriving) right after step
  // 14; rank 0 waits in step 15's first collective. `timeout 120` only keeps
  // a broken watchdog from hanging the test.
  const auto start = std::chrono::steady_clock::now();
  RunResult stopped = Shell("timeout 120 env " + Mpirun(2) + Runfile("tests/run_with_crash_hook") + " " + SpecFile() +
                            " --output_dir " + hung +
                            " --crash_after_step 14 --crash_rank 1 --crash_signal 19 --collective_timeout 3");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(stopped.exit_code, 0) << stopped.output;
  EXPECT_NE(stopped.exit_code, 124) << "the watchdog did not end the job: " << stopped.output;
  EXPECT_NE(stopped.output.find("[rank 0/2] error: the loss all-reduce (collective #"), std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("of step 15 did not complete within --collective_timeout 3 s"), std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("rank(s) 1 did not arrive"), std::string::npos) << stopped.output;
  EXPECT_NE(stopped.output.find("continue from its last checkpoint with: mpirun -np 2"), std::string::npos)
      << stopped.output;
  std::cout << "hung rank detected and the job ended after " << seconds << " s (timeout 3 s)\n";
  EXPECT_FALSE(std::filesystem::exists(hung + "/metrics.json"));
  EXPECT_EQ(ReadFile(hung + "/checkpoints/latest").substr(0, 12), "step_0000010");

  RunResult resumed = Shell(Mpirun(2) + Runfile("experiments/run") + " --resume " + hung);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const std::vector<LogRow> whole = Log(two_), again = Log(hung);
  ASSERT_EQ(again.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i)
    EXPECT_EQ(again[i].loss, whole[i].loss) << "step " << whole[i].step;  // bit for bit (same ranks)
  EXPECT_EQ(ReadFile(hung + "/model.safetensors"), ReadFile(two_ + "/model.safetensors"));
}

TEST_F(DataParallel, CollectiveTimeoutMustBePositive) {
  RunResult r = RunBinary(SpecFile() + " --collective_timeout 0 --output_dir " + TempDir() + "/no_timeout");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--collective_timeout: 0 is not a number of seconds in (0, 604800]"), std::string::npos)
      << r.output;
}

// Encoder-decoder on parallel text, dropout on, the fused attention kernel:
// exact match and BLEU of greedy decoding, sharded (9 decoded examples: 4
// on rank 0, 5 on rank 1) and summed from per-rank statistics.
TEST_F(DataParallel, DecodingMetricsShardedOverTwoRanksEqualOneProcess) {
  const std::string spec = TempDir() + "/seq2seq.pbtxt";
  std::ofstream(spec)
      << "name: \"data_parallel_seq2seq\"\nmodel { family: ENCODER_DECODER d_model: 32 num_layers: 1 num_heads: 2 "
         "d_ff: 64 dropout: 0.1 position { plugin: \"sinusoidal\" } }\n"
         "task { plugin: \"parallel_text\" options { [type.googleapis.com/tvlab.ParallelTextOptions] { path: \""
      << Runfile("configs/data/digits_to_words.tsv")
      << "\" max_length: 64 } } }\n"
         "train { steps: 40 batch_size: 8 log_every: 1 optimizer { adamw { lr: 3e-3 } } }\n"
         "eval { examples: 37 batch_size: 10 decode_examples: 9 decoding { max_new_tokens: 24 } }\n"
         "runtime { threads: 1 attention: \"fused\" }\n";
  const std::string one = TempDir() + "/seq2seq_one", two = TempDir() + "/seq2seq_two";
  RunResult a = RunBinary(spec + " --output_dir " + one);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = Shell(Mpirun(2) + Runfile("experiments/run") + " " + spec + " --output_dir " + two);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::vector<LogRow> x = Log(one), y = Log(two);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(Relative(y[i].loss, x[i].loss), 1e-6) << "step " << x[i].step;
  const std::string m1 = ReadFile(one + "/metrics.json"), m2 = ReadFile(two + "/metrics.json");
  EXPECT_EQ(JsonNumber(m2, "decoded_examples"), 9);
  EXPECT_GT(JsonNumber(m1, "bleu"), 0);  // a BLEU worth comparing
  for (const char* metric : {"eval_loss", "token_accuracy", "sequence_accuracy", "exact_match", "bleu"})
    EXPECT_LE(Relative(JsonNumber(m2, metric), JsonNumber(m1, metric)), 1e-6) << metric;
}

TEST_F(DataParallel, BatchThatDoesNotSplitAmongTheRanksIsAValidationError) {
  RunResult r = Shell(Mpirun(3) + Runfile("experiments/run") + " " + SpecFile() + " --output_dir " +
                      TempDir() + "/three");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("train.batch_size: 16 does not divide among the 3 ranks"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--set train.batch_size=18"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(TempDir() + "/three"));
}

TEST_F(DataParallel, RanksWithDifferentSpecsOrProgramsAreRefusedBeforeTraining) {
  const std::string run = Runfile("experiments/run"), spec = SpecFile();
  RunResult specs = Shell(Mpirun(1) + run + " " + spec + " --output_dir " + TempDir() + "/specs : -np 1 " + run +
                          " " + spec + " --set train.optimizer.adamw.lr=0.002 --output_dir " + TempDir() + "/specs");
  EXPECT_NE(specs.exit_code, 0) << specs.output;
  EXPECT_NE(specs.output.find("the resolved spec of rank(s) 1 differs from rank 0's"), std::string::npos)
      << specs.output;
  EXPECT_EQ(specs.output.find("the program"), std::string::npos) << specs.output;
  // Rank 0 removed the directory it had made: nothing looks like a run.
  EXPECT_FALSE(std::filesystem::exists(TempDir() + "/specs"));

  RunResult programs = Shell(Mpirun(1) + run + " " + spec + " --output_dir " + TempDir() + "/programs : -np 1 " +
                             Runfile("tests/run_with_crash_hook") + " " + spec + " --output_dir " + TempDir() +
                             "/programs");
  EXPECT_NE(programs.exit_code, 0) << programs.output;
  EXPECT_NE(programs.output.find("the program (/proc/self/exe) of rank(s) 1 differs"), std::string::npos)
      << programs.output;
}

// Gradients in memory the host cannot read (simulated_device: a stand-in for
// a GPU) go through ToVector/FromVector copies; a direct read would fault.
TEST_F(DataParallel, OnADeviceBackendTwoRanksEqualOneReferenceProcess) {
  const std::string ref = TempDir() + "/reference", sim = TempDir() + "/simulated";
  RunResult one = RunBinary(SpecFile() + " --set runtime.backend=reference --output_dir " + ref);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = Shell(Mpirun(2) + Runfile("experiments/run") + " " + SpecFile() +
                        " --set runtime.backend=simulated_device --output_dir " + sim);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const std::vector<LogRow> a = Log(ref), b = Log(sim);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(Relative(b[i].loss, a[i].loss), 1e-6) << "step " << a[i].step;
  EXPECT_EQ(JsonNumber(ReadFile(sim + "/metrics.json"), "token_accuracy"),
            JsonNumber(ReadFile(ref + "/metrics.json"), "token_accuracy"));
}

}  // namespace
}  // namespace tvlab
