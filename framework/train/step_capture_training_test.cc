// train.step_capture end to end: ten training steps (dropout on, AdamW)
// give the same loss at every step and the same final weights, byte for
// byte, eagerly (CAPTURE_OFF) and captured (CAPTURE_REQUIRED: steps 4 to 9
// replayed, drawing dropout masks again in the backward and keeping chain
// results out of memory: chain_scratch.h), for every family with the
// plugin kinds' defaults, a decoder
// with RoPE, SwiGLU, RMSNorm and per-block activation checkpointing, on
// every host backend and the simulated device (buffers the host cannot
// read). And a run that cannot capture says why: in metrics.json under
// CAPTURE_AUTO, as an error under CAPTURE_REQUIRED.

#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The loss column of train_log.csv (step,loss,...), as written.
std::vector<std::string> Losses(const std::string& run_dir) {
  std::istringstream in(ReadFile(run_dir + "/train_log.csv"));
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::string> losses;
  while (std::getline(in, line)) {
    const size_t start = line.find(',') + 1;
    losses.push_back(line.substr(start, line.find(',', start) - start));
  }
  return losses;
}

struct Case {
  const char* name;
  const char* model;
  const char* task;
  const char* train;  // extra train fields
};

constexpr char kText[] =
    "plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "
    "\"/usr/share/common-licenses/GPL-3\" context_length: 16 } }";
constexpr char kFixedReverse[] =
    "plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { min_length: 6 max_length: 6 } }";
constexpr char kSort[] =
    "plugin: \"sort_digits\" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 8 vocab_size: 10 } }";

const Case kCases[] = {
    {"encoder_only", "family: ENCODER_ONLY", kSort, ""},
    {"decoder_only", "family: DECODER_ONLY", kText, ""},
    {"encoder_decoder", "family: ENCODER_DECODER", kFixedReverse, ""},
    {"decoder_llama",
     "family: DECODER_ONLY position { plugin: \"rope\" } ffn { plugin: \"swiglu\" } norm { plugin: \"rmsnorm\" }",
     kText, "activation_checkpointing: BLOCK"},
};

// Trains `c` for `steps` steps under `capture`; the run directory, or the
// error.
absl::StatusOr<std::string> Train(const Case& c, const std::string& capture, const std::string& backend,
                                  int steps = 10, const std::string& extra = "") {
  const std::string spec_path = TmpDir() + "/" + c.name + ".pbtxt";
  std::ofstream(spec_path) << "name: \"c\"\nmodel { " << c.model
                           << " d_model: 16 num_layers: 2 num_heads: 2 d_ff: 32 dropout: 0.1 }\ntask { " << c.task
                           << " }\ntrain { steps: " << steps << " batch_size: 4 log_every: 1 " << c.train << " "
                           << extra << " optimizer { adamw { lr: 3e-3 } } }\neval { examples: 4 }\n";
  auto spec = LoadExperiment(spec_path, {"train.step_capture=" + capture, "runtime.backend=" + backend});
  if (!spec.ok()) return spec.status();
  const std::string run_dir = TmpDir() + "/" + c.name + "_" + capture + "_" + backend + std::to_string(steps) +
                              (extra.empty() ? "" : "_" + std::to_string(std::hash<std::string>{}(extra)));
  std::ostringstream progress;
  auto metrics = RunExperiment(*spec, *LoadTask(*spec).value(), run_dir, progress);
  if (!metrics.ok()) return metrics.status();
  if (capture == "CAPTURE_REQUIRED") {
    EXPECT_EQ(metrics->step_capture().rfind("on from step 4:", 0), 0u) << metrics->step_capture();
    EXPECT_EQ(metrics->captured_steps(), steps - 4);
    EXPECT_NE(progress.str().find("step 3's replay matched the eager step bit for bit"), std::string::npos);
    // Every case has dropout: the replay keeps the masks as bits for the
    // backward (cpu_onednn) or draws them again there (but not under
    // per-block checkpointing, which draws them in the recomputed forward)
    // and keeps chain results out of memory (chain_scratch.h), and the
    // losses and weights below stay the eager ones'.
    std::smatch counts;
    const std::string summary = metrics->step_capture();
    EXPECT_TRUE(std::regex_search(
        summary, counts, std::regex(R"((\d+) dropout masks kept as bits and (\d+) redrawn.* (\d+) chain results)")))
        << summary;
    if (counts.size() == 4) {
      const int kept = std::stoi(counts[1]), redrawn = std::stoi(counts[2]);
      EXPECT_EQ(kept + redrawn > 0, std::string(c.train).empty()) << summary;
      EXPECT_EQ(kept > 0, std::string(c.train).empty() && backend == "cpu_onednn") << summary;
      EXPECT_GT(std::stoi(counts[3]), 0) << summary;
    }
  }
  return run_dir;
}

class StepCaptureTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(StepCaptureTraining, SameLossesAndWeightsAsEager) {
  for (const Case& c : kCases) {
    auto eager = Train(c, "CAPTURE_OFF", GetParam());
    ASSERT_TRUE(eager.ok()) << c.name << ": " << eager.status();
    auto captured = Train(c, "CAPTURE_REQUIRED", GetParam());
    ASSERT_TRUE(captured.ok()) << c.name << ": " << captured.status();
    const std::vector<std::string> losses = Losses(*eager);
    ASSERT_EQ(losses.size(), 10u) << c.name;
    EXPECT_EQ(Losses(*captured), losses) << c.name;
    const std::string weights = ReadFile(*eager + "/model.safetensors");
    ASSERT_FALSE(weights.empty()) << c.name;
    EXPECT_TRUE(ReadFile(*captured + "/model.safetensors") == weights) << c.name;
  }
}

// step_capture_training_emulated_test: gpu_cuda's sources on the CUDA
// emulator (device buffers, its own kernels and streams).
#ifdef TVLAB_CAPTURE_EMULATED_GPU
INSTANTIATE_TEST_SUITE_P(Backends, StepCaptureTraining, ::testing::Values("gpu_cuda"),
                         [](const auto& info) { return info.param; });
#else
INSTANTIATE_TEST_SUITE_P(Backends, StepCaptureTraining,
                         ::testing::Values("cpu_onednn", "reference", "simulated_device"),
                         [](const auto& info) { return info.param; });
#endif

#ifndef TVLAB_CAPTURE_EMULATED_GPU
// metrics.json's step_capture of a run under CAPTURE_AUTO.
std::string Summary(const std::string& run_dir) {
  const std::string json = ReadFile(run_dir + "/metrics.json");
  const size_t key = json.find("\"step_capture\": \"");
  if (key == std::string::npos) return "";
  const size_t start = key + 17;
  return json.substr(start, json.find('"', start) - start);
}

TEST(StepCaptureRefusal, SaysWhyInMetricsOrAsAnError) {
  const Case variable{"variable", "family: ENCODER_DECODER",
                      "plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { min_length: 2 "
                      "max_length: 9 } }",
                      ""};
  auto run = Train(variable, "CAPTURE_AUTO", "cpu_onednn");
  ASSERT_TRUE(run.ok()) << run.status();
  // The two recorded steps' batches differ in length: their operations
  // differ ("differ at operation ..."), or their number does ("ran N and M
  // operations": a length's position table is computed the first time only).
  EXPECT_EQ(Summary(*run).rfind("off: steps 1 and 2 ", 0), 0u) << Summary(*run);
  EXPECT_TRUE(Summary(*run).find("differ at operation") != std::string::npos ||
              Summary(*run).find(" operations") != std::string::npos)
      << Summary(*run);
  auto required = Train(variable, "CAPTURE_REQUIRED", "cpu_onednn");
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.status().message().find("train.step_capture is CAPTURE_REQUIRED"), std::string::npos);

  auto z_loss = Train(kCases[1], "CAPTURE_AUTO", "cpu_onednn", 10, "z_loss: 1e-4");
  ASSERT_TRUE(z_loss.ok()) << z_loss.status();
  EXPECT_EQ(Summary(*z_loss), "off: the model's auxiliary outputs (or train.z_loss) are read on the host every step");
  auto short_run = Train(kCases[1], "CAPTURE_AUTO", "cpu_onednn", 4);
  ASSERT_TRUE(short_run.ok()) << short_run.status();
  EXPECT_EQ(Summary(*short_run).rfind("off: 4 steps to train", 0), 0u) << Summary(*short_run);
  auto off = Train(kCases[1], "CAPTURE_OFF", "cpu_onednn", 4);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(Summary(*off), "off: train.step_capture is CAPTURE_OFF");
}

// The fields of a tab-separated row, empty ones included (a trailing one too).
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields(1);
  for (const char c : line) {
    if (c == '\t') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// 2 m n k b of a GEMM row's detail "m x n x k, batch b, ...".
double GemmFlops(const std::string& detail) {
  std::smatch d;
  if (!std::regex_search(detail, d, std::regex(R"((\d+) x (\d+) x (\d+), batch (\d+))"))) return 0;
  return 2.0 * std::stod(d[1]) * std::stod(d[2]) * std::stod(d[3]) * std::stod(d[4]);
}

// train.step_profile: step_profile.tsv has a row for every operation the
// summary says is replayed, forward then backward, each GEMM with its
// shape and its rate (its FLOPs over its time; a fraction of the peak
// where the run knows one), shares summing to one; the losses are the
// unprofiled run's. A run that never replays writes none, and CAPTURE_OFF
// is refused.
TEST(StepProfile, ARowPerReplayedOperation) {
  auto plain = Train(kCases[1], "CAPTURE_REQUIRED", "cpu_onednn");
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto profiled = Train(kCases[1], "CAPTURE_REQUIRED", "cpu_onednn", 10, "step_profile: true");
  ASSERT_TRUE(profiled.ok()) << profiled.status();
  EXPECT_EQ(Losses(*profiled), Losses(*plain));
  std::smatch ops;
  const std::string summary = Summary(*profiled);
  ASSERT_TRUE(std::regex_search(summary, ops, std::regex(R"(on from step 4: (\d+) operations)"))) << summary;
  std::istringstream table(ReadFile(*profiled + "/step_profile.tsv"));
  std::string line;
  std::getline(table, line);
  EXPECT_EQ(line, "op\tpass\tkernel\tdetail\tus_per_step\tshare\tgflop_per_s\tof_peak");
  int rows = 0, gemms = 0, backward = 0;
  double share = 0, us = 0;
  while (std::getline(table, line)) {
    const std::vector<std::string> f = Fields(line);
    ASSERT_EQ(f.size(), 8u) << line;
    EXPECT_EQ(f[0], std::to_string(rows)) << line;
    ASSERT_TRUE(f[1] == "forward" || f[1] == "backward") << line;
    EXPECT_FALSE(f[1] == "forward" && backward > 0) << "a forward row after the backward began: " << line;
    backward += f[1] == "backward";
    if (f[2].rfind("Gemm", 0) == 0) {
      ++gemms;
      EXPECT_TRUE(std::regex_match(f[3], std::regex(R"(\d+ x \d+ x \d+, batch \d+(, A\^T)?(, B\^T)?)"))) << line;
      // The time is printed to 0.01 us and the rate to 0.1 GFLOP/s: the
      // rate lies between the FLOPs over the time's two bounds.
      ASSERT_FALSE(f[6].empty()) << "a GEMM row without its rate: " << line;
      const double us_per_step = std::stod(f[4]), rate = std::stod(f[6]);
      if (us_per_step > 0.01) {
        EXPECT_GE(rate, GemmFlops(f[3]) / ((us_per_step + 0.005) * 1e3) - 0.05) << line;
        EXPECT_LE(rate, GemmFlops(f[3]) / ((us_per_step - 0.005) * 1e3) + 0.05) << line;
      }
      if (!f[7].empty()) {
        EXPECT_GT(std::stod(f[7]), 0.0) << line;
      }
    } else {
      EXPECT_EQ(f[6], "") << line;
      EXPECT_EQ(f[7], "") << line;
    }
    EXPECT_GE(std::stod(f[4]), 0.0) << line;
    us += std::stod(f[4]);
    share += std::stod(f[5]);
    ++rows;
  }
  EXPECT_EQ(rows, std::stoi(ops[1]));
  EXPECT_GT(gemms, 0);
  EXPECT_GT(backward, 0);
  EXPECT_GT(us, 0.0);
  EXPECT_NEAR(share, 1.0, 1e-3);

  // The simulated device's kernels are done when they return, as a CPU's.
  auto simulated = Train(kCases[1], "CAPTURE_REQUIRED", "simulated_device", 10, "step_profile: true");
  ASSERT_TRUE(simulated.ok()) << simulated.status();
  EXPECT_TRUE(std::ifstream(*simulated + "/step_profile.tsv").good());
  auto short_run = Train(kCases[1], "CAPTURE_AUTO", "cpu_onednn", 4, "step_profile: true");
  ASSERT_TRUE(short_run.ok()) << short_run.status();
  EXPECT_FALSE(std::ifstream(*short_run + "/step_profile.tsv").good());
  auto off = Train(kCases[1], "CAPTURE_OFF", "cpu_onednn", 4, "step_profile: true");
  ASSERT_FALSE(off.ok());
  EXPECT_NE(off.status().message().find("train.step_profile times the captured step's operations, but "
                                         "train.step_capture is CAPTURE_OFF"),
            std::string::npos)
      << off.status();
}
#endif

}  // namespace
}  // namespace tvlab
