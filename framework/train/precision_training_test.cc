// runtime.precision end to end: a tiny sort_digits run trains in bf16 on the
// reference backend (the oracle: operands rounded to bf16, fp32
// accumulation) and on cpu_onednn where oneDNN runs bf16 matmuls on this CPU;
// the loss falls, the accuracy is within a stated margin of the fp32 run at
// the same seed, and the run records its precision in metrics.json and in
// spec.resolved.pbtxt.

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/data/load_task.h"
#include "framework/spec/spec_loader.h"
#include "framework/train/run_experiment.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string TmpDir() { return std::getenv("TEST_TMPDIR"); }

// configs/sort_digits.pbtxt, smaller and shorter: a few seconds per run on
// the reference loops.
Experiment TinySort(const std::string& backend, const std::string& precision) {
  const std::string path = TmpDir() + "/tiny_sort.pbtxt";
  std::ofstream(path) << R"(name: "tiny_sort"
seed: 0
model { family: ENCODER_ONLY d_model: 32 num_layers: 2 num_heads: 4 d_ff: 64 dropout: 0
        scale_embeddings: true position { plugin: "sinusoidal" } }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 8 vocab_size: 10 } } }
train { steps: 150 batch_size: 32 optimizer { adamw { lr: 3e-3 } } log_every: 5 }
eval { examples: 300 seed: 42 }
)";
  auto spec = LoadExperiment(path, {"runtime.backend=" + backend, "runtime.precision=" + precision});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : Experiment();
}

// The loss column of train_log.csv (step,loss,...).
std::vector<double> Losses(const std::string& run_dir) {
  std::ifstream in(run_dir + "/train_log.csv");
  std::string line;
  std::getline(in, line);  // header
  std::vector<double> losses;
  while (std::getline(in, line)) losses.push_back(std::stod(line.substr(line.find(',') + 1)));
  return losses;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Token accuracy of bf16 within this of fp32 at the same seed. Measured on
// this spec (seed 0): reference fp32 0.773, bf16 0.778; cpu_onednn fp32
// 0.773, bf16 0.777. At seeds 1, 2, 3 (cpu_onednn) fp32 gave 0.743, 0.764,
// 0.733 and bf16 0.742, 0.758, 0.728: bf16 moves accuracy by under 0.01,
// less than the 0.03 spread between seeds; the margin leaves room for that
// spread. bf16 rounds every GEMM operand by up to 2^-9 relative, so the runs
// follow different trajectories after the first steps.
constexpr double kAccuracyMargin = 0.05;

void TrainsInBf16LikeFp32(const std::string& backend) {
  std::ostringstream sink;
  const std::string fp32_dir = TmpDir() + "/" + backend + "_fp32";
  const std::string bf16_dir = TmpDir() + "/" + backend + "_bf16";
  const Experiment fp32_spec = TinySort(backend, "fp32"), bf16_spec = TinySort(backend, "bf16");
  auto fp32 = RunExperiment(fp32_spec, *LoadTask(fp32_spec).value(), fp32_dir, sink);
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  auto bf16 = RunExperiment(bf16_spec, *LoadTask(bf16_spec).value(), bf16_dir, sink);
  ASSERT_TRUE(bf16.ok()) << bf16.status();

  const std::vector<double> losses = Losses(bf16_dir);
  ASSERT_GE(losses.size(), 20u);
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "bf16 loss did not fall";
  EXPECT_NE(losses, Losses(fp32_dir)) << "bf16 gave the fp32 losses: precision ignored";
  EXPECT_NEAR(bf16->token_accuracy(), fp32->token_accuracy(), kAccuracyMargin);
  EXPECT_GT(bf16->token_accuracy(), 0.5);
  std::cerr << backend << ": token accuracy fp32 " << fp32->token_accuracy() << ", bf16 "
            << bf16->token_accuracy() << "; final loss fp32 " << fp32->final_train_loss()
            << ", bf16 " << bf16->final_train_loss() << "\n";

  EXPECT_EQ(fp32->precision(), "fp32");
  EXPECT_EQ(bf16->precision(), "bf16");
  EXPECT_NE(ReadFile(bf16_dir + "/metrics.json").find("\"precision\": \"bf16\""), std::string::npos);
  EXPECT_NE(ReadFile(bf16_dir + "/spec.resolved.pbtxt").find("precision: \"bf16\""),
            std::string::npos);
  EXPECT_NE(ReadFile(fp32_dir + "/spec.resolved.pbtxt").find("precision: \"fp32\""),
            std::string::npos);
}

TEST(PrecisionEndToEnd, ReferenceTrainsInBf16) { TrainsInBf16LikeFp32("reference"); }

TEST(PrecisionEndToEnd, OnednnTrainsInBf16WhereTheCpuAllows) {
  auto backend = FindBackend("cpu_onednn");
  ASSERT_TRUE(backend.ok());
  const PrecisionSupport bf16 = (*backend)->precision(Precision::kBf16);
  if (!bf16.supported) GTEST_SKIP() << bf16.why_not;
  TrainsInBf16LikeFp32("cpu_onednn");
}

TEST(PrecisionEndToEnd, ValidationRefusesWhatTheBackendCannotRun) {
  const std::string path = TmpDir() + "/bad.pbtxt";
  std::ofstream(path) << "model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
                         "task { plugin: \"sort_digits\" }\n";
  auto spec = LoadExperiment(path, {"runtime.backend=cpu_onednn", "runtime.precision=tf32"});
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("runtime.precision: backend 'cpu_onednn' cannot run 'tf32'"),
            std::string::npos)
      << spec.status();
  spec = LoadExperiment(path, {"runtime.precision=half"});
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("runtime.precision: 'half' is not a precision"),
            std::string::npos)
      << spec.status();
}

}  // namespace
}  // namespace tvlab
