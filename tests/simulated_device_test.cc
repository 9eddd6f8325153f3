// The simulated device proves, on a machine without a GPU, that the framework
// never reads device memory behind the backend's back: every family trains,
// evaluates and decodes (greedy and beam search, with the KV cache), resumes
// after a kill, and runs in a grid on `simulated_device`, through the real run
// binary, and gives bitwise the numbers of `reference` (whose kernels it
// runs). A host read of device data stops the process (the first tests).

#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/backend/backend.h"
#include "framework/tensor/tensor.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;

TEST(SimulatedDeviceDeathTest, HostReadOfDeviceDataStopsTheProcess) {
  ScopedBackend device("simulated_device");
  Tensor t = Tensor::Full({4}, 2.0f);
  EXPECT_EQ(t.device(), Device::kSimulated);
  EXPECT_DEATH((void)t.data(), "host access to a tensor of shape \\(4\\) on simulated_device");
  // Going around data(): the pointer itself faults on the host.
  EXPECT_DEATH(
      {
        volatile float v = *t.ptr();
        (void)v;
      },
      "");
  // Explicit copies are the way: they are exact.
  EXPECT_EQ(t.ToVector(), (std::vector<float>{2, 2, 2, 2}));
  EXPECT_EQ(t.ToHost().data()[3], 2.0f);
}

TEST(SimulatedDeviceDeathTest, HostPointerPassedToADeviceKernelStops) {
  auto backend = MakeBackend("simulated_device");
  ASSERT_TRUE(backend.ok());
  std::vector<float> host(8, 1.0f);
  EXPECT_DEATH((*backend)->Unary(UnaryOp::kRelu, host.data(), host.data(), 8),
               "a host pointer was passed to a simulated_device kernel");
}

// metrics.json without the fields that legitimately differ (timing, the
// backend's name, allocator bytes, the device's peak and MFU: the
// "efficiency" object, whose lines are skipped up to its closing brace).
std::string Metrics(const std::string& dir) {
  std::istringstream in(ReadFile(dir + "/metrics.json"));
  std::string line, out;
  bool in_efficiency = false;
  while (std::getline(in, line)) {
    if (line.find("\"efficiency\": {") != std::string::npos) in_efficiency = true;
    if (in_efficiency) {
      in_efficiency = line.find('}') == std::string::npos;
      continue;
    }
    if (line.find("second") == std::string::npos && line.find("backend") == std::string::npos &&
        line.find("bytes\"") == std::string::npos && line.find("allocat") == std::string::npos &&
        // Counted per process (a resume restarts them): the attention calls, and
        // step_capture and captured_steps (a resumed run captures anew).
        line.find("attention_calls") == std::string::npos && line.find("captur") == std::string::npos)
      out += line + "\n";
  }
  return out;
}

struct Case {
  std::string config, overrides;
  int steps = 8;
};

class SameNumbersAsReference : public ::testing::TestWithParam<Case> {};

TEST_P(SameNumbersAsReference, TrainEvaluateAndDecode) {
  const Case& c = GetParam();
  const std::string base = Runfile("configs/" + c.config + ".pbtxt") +
                           " --set train.steps=" + std::to_string(c.steps) +
                           " --set train.log_every=1 --set eval.examples=32 " + c.overrides;
  const std::string ref = TempDir() + "/" + c.config + "_reference";
  const std::string sim = TempDir() + "/" + c.config + "_simulated";
  fs::remove_all(ref);
  fs::remove_all(sim);
  RunResult a = RunBinary(base + " --set runtime.backend=reference --output_dir " + ref);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = RunBinary(base + " --set runtime.backend=simulated_device --output_dir " + sim);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(TrainLogLosses(sim), TrainLogLosses(ref));
  EXPECT_NE(TrainLogLosses(ref).find("\n" + std::to_string(c.steps - 1) + ","), std::string::npos)
      << TrainLogLosses(ref);
  EXPECT_EQ(Metrics(sim), Metrics(ref));
  EXPECT_EQ(ReadFile(sim + "/model.safetensors"), ReadFile(ref + "/model.safetensors"));
  EXPECT_NE(ReadFile(sim + "/metrics.json").find("simulated_device"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, SameNumbersAsReference,
    ::testing::Values(
        // Encoder-only, with dropout (Philox masks), clipping and accumulation.
        Case{"sort_digits",
             "--set model.dropout=0.1 --set train.clip_grad_norm=0.5 "
             "--set train.grad_accumulation=2", 30},
        // Decoder-only with RoPE, greedy decoding with the KV cache.
        Case{"lm_copy", "--set eval.decode_examples=8", 30},
        // Encoder-decoder, beam search (rows reordered in the caches).
        Case{"seq2seq_reverse",
             "--set eval.decode_examples=6 --set eval.decoding.method=BEAM "
             "--set eval.decoding.beam_size=3",
             30}),
    [](const auto& info) { return info.param.config; });

// Every other plugin (the sort_digits variant configs: scores, layouts,
// positions, norms, placements, FFNs), a few steps each.
INSTANTIATE_TEST_SUITE_P(
    EveryPlugin, SameNumbersAsReference,
    ::testing::Values(Case{"sort_digits_additive", ""}, Case{"sort_digits_alibi", ""},
                      Case{"sort_digits_dot_product", ""}, Case{"sort_digits_gelu", ""},
                      Case{"sort_digits_gqa", ""}, Case{"sort_digits_learned", ""},
                      Case{"sort_digits_mla", ""}, Case{"sort_digits_mqa", ""},
                      Case{"sort_digits_no_position", ""}, Case{"sort_digits_post_ln", ""},
                      Case{"sort_digits_rmsnorm", ""}, Case{"sort_digits_rope", ""},
                      Case{"sort_digits_swiglu", ""},
                      // Training probes (every reduction on the device, the
                      // same numbers in metrics.json's probes) and MoE.
                      Case{"sort_digits_moe", "--set train.probe_every=3"}),
    [](const auto& info) { return info.param.config; });

TEST(SimulatedDevice, KilledAndResumedRunEqualsTheUninterruptedReferenceRun) {
  const std::string spec = Runfile("configs/sort_digits.pbtxt") +
                           " --set train.steps=30 --set train.log_every=1"
                           " --set train.checkpoint_every=10 --set model.dropout=0.1"
                           " --set eval.examples=64";
  const std::string whole = TempDir() + "/resume_reference", broken = TempDir() + "/resume_sim";
  fs::remove_all(whole);
  fs::remove_all(broken);
  ASSERT_EQ(RunBinary(spec + " --set runtime.backend=reference --output_dir " + whole).exit_code,
            0);
  RunResult killed =
      RunProgram("tests/run_with_crash_hook", spec + " --set runtime.backend=simulated_device"
                                                     " --output_dir " + broken +
                                                     " --crash_after_step 24");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  RunResult resumed = RunBinary("--resume " + broken);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(TrainLogLosses(broken), TrainLogLosses(whole));
  EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(whole + "/model.safetensors"));
  EXPECT_EQ(Metrics(broken), Metrics(whole));
}

TEST(SimulatedDevice, GridCellsOnBothBackendsAgree) {
  const std::string dir = TempDir() + "/backend_grid";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/base.pbtxt")
      << "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 "
         "d_ff: 32 }\ntask { plugin: \"sort_digits\" }\ntrain { steps: 12 log_every: 1 }\n"
         "eval { examples: 32 }\n";
  std::ofstream(dir + "/grid.pbtxt")
      << "base_spec: \"base.pbtxt\"\n"
         "axis { field: \"runtime.backend\" values: [\"reference\", \"simulated_device\"] "
         "label: \"backend\" }\nseeds: [3]\noutput_dir: \"out\"\n";
  RunResult r = RunBinary(dir + "/grid.pbtxt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> runs;
  for (const auto& e : fs::directory_iterator(dir + "/out/runs")) runs.push_back(e.path());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(TrainLogLosses(runs[0]), TrainLogLosses(runs[1]));
  EXPECT_EQ(Metrics(runs[0]), Metrics(runs[1]));
  EXPECT_NE(TrainLogLosses(runs[0]).find("\n11,"), std::string::npos);  // steps 0..11
}

}  // namespace
}  // namespace tvlab
