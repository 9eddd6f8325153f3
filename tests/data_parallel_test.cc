// Data-parallel training under a real `mpirun -np 2` (Open MPI from Debian;
// docs/distributed.md): two ranks on half batches follow the one-process
// run's loss curve (<= 1e-6 relative) to the same final metrics; a rank
// killed with SIGKILL stops the job with a clear error, leaves whole files,
// and --resume (again on 2 ranks) finishes bit for bit like the run never
// interrupted; bad launches (a batch that does not split, ranks with
// different specs or programs) are refused with errors naming the cause;
// on the simulated device backend too.
//
// Skipped, saying so, where mpirun is missing (a --config=nompi machine).

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

// No dropout: dropout masks are keyed per rank under mpirun (different
// draws from one process's), everything else is the same computation.
const char kSpec[] =
    "name: \"data_parallel\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 "
    "dropout: 0 }\ntask { plugin: \"sort_digits\" }\n"
    "train { steps: 30 batch_size: 16 log_every: 1 checkpoint_every: 10 grad_accumulation: 2 "
    "clip_grad_norm: 1.0 optimizer { adamw { lr: 1e-2 } } lr_schedule { kind: WARMUP_COSINE warmup_steps: 5 } }\n"
    "eval { examples: 200 }\nruntime { threads: 1 }\n";

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
};

std::vector<LogRow> Log(const std::string& dir) {
  std::ifstream in(dir + "/train_log.csv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<LogRow> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string step, loss, lr, grad_norm;
    std::getline(fields, step, ',');
    std::getline(fields, loss, ',');
    std::getline(fields, lr, ',');
    std::getline(fields, grad_norm, ',');
    rows.push_back({std::stoi(step), std::stod(loss), std::stod(grad_norm)});
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
  const std::string m1 = ReadFile(one_ + "/metrics.json"), m2 = ReadFile(two_ + "/metrics.json");
  EXPECT_EQ(JsonNumber(m2, "token_accuracy"), JsonNumber(m1, "token_accuracy"));
  EXPECT_EQ(JsonNumber(m2, "sequence_accuracy"), JsonNumber(m1, "sequence_accuracy"));
  EXPECT_LE(Relative(JsonNumber(m2, "eval_loss"), JsonNumber(m1, "eval_loss")), 1e-5);
  EXPECT_EQ(JsonNumber(m2, "data_parallel_ranks"), 2);
  EXPECT_EQ(JsonNumber(m1, "data_parallel_ranks"), -1e300);  // absent for one process
  EXPECT_GT(JsonNumber(m2, "allreduce_seconds"), 0);
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
