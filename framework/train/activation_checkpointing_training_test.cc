// train.activation_checkpointing end to end: a few training steps (dropout
// on, AdamW) give the same loss at every step and the same final weights,
// byte for byte, under NONE, BLOCK and SELECTIVE, for a decoder LM and an
// encoder-decoder: every step's gradients were the same to the bit; and
// metrics.json names the setting beside training's peak memory. (One
// forward and backward pass per family, backend and plugin kind:
// framework/model/activation_checkpointing_test.cc.)

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
};

const Case kCases[] = {
    {"decoder_lm", "family: DECODER_ONLY position { plugin: \"rope\" } ffn { plugin: \"swiglu\" }",
     "plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "
     "\"/usr/share/common-licenses/GPL-3\" context_length: 32 } }"},
    {"encoder_decoder", "family: ENCODER_DECODER position { plugin: \"sinusoidal\" }",
     "plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { min_length: 3 max_length: 10 } }"},
};

// Trains `c` for 4 steps under `setting`; returns the run directory.
std::string Train(const Case& c, const std::string& setting) {
  const std::string spec_path = TmpDir() + "/" + c.name + ".pbtxt";
  std::ofstream(spec_path) << "name: \"c\"\nmodel { " << c.model
                           << " d_model: 32 num_layers: 3 num_heads: 4 d_ff: 64 dropout: 0.1 }\ntask { " << c.task
                           << " }\ntrain { steps: 4 batch_size: 8 log_every: 1 optimizer { adamw { lr: 3e-3 } } }\n"
                           << "eval { examples: 8 }\n";
  auto spec = LoadExperiment(spec_path, {"train.activation_checkpointing=" + setting});
  EXPECT_TRUE(spec.ok()) << spec.status();
  const std::string run_dir = TmpDir() + "/" + c.name + "_" + setting;
  std::ostringstream progress;
  auto metrics = RunExperiment(*spec, *LoadTask(*spec).value(), run_dir, progress);
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  if (!metrics.ok()) return run_dir;
  // metrics.json reports the setting and training's memory beside it.
  EXPECT_EQ(metrics->activation_checkpointing(), setting);
  EXPECT_GT(metrics->train_peak_memory_bytes(), 0);
  EXPECT_LE(metrics->train_peak_memory_bytes(), metrics->peak_memory_bytes());
  EXPECT_GE(metrics->train_peak_rss_bytes(), metrics->train_peak_memory_bytes());
  return run_dir;
}

TEST(ActivationCheckpointingTraining, SameLossesAndWeightsAsNone) {
  ScopedBackend backend("cpu_onednn");
  for (const Case& c : kCases) {
    const std::string none = Train(c, "NONE");
    const std::vector<std::string> losses = Losses(none);
    ASSERT_EQ(losses.size(), 4u) << c.name;
    const std::string weights = ReadFile(none + "/model.safetensors");
    ASSERT_FALSE(weights.empty()) << c.name;
    for (const std::string setting : {"BLOCK", "SELECTIVE"}) {
      const std::string run = Train(c, setting);
      EXPECT_EQ(Losses(run), losses) << c.name << " " << setting;
      EXPECT_TRUE(ReadFile(run + "/model.safetensors") == weights) << c.name << " " << setting;
    }
  }
}

}  // namespace
}  // namespace tvlab
