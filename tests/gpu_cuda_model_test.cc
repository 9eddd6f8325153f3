// Model-level conformance of the GPU backend: every family and every other
// plugin trains (and evaluates, and decodes) through the real run binary on
// `gpu_cuda`, with the per-step fp32 loss within 1e-3 of the `reference`
// run's (not bitwise: the GPU sums in another order). The simulated device
// proves the host never reads device memory (simulated_device_test.cc); this
// proves the CUDA kernels compose into the same training.
//
// Skipped, saying why, in a build without --config=cuda, on a machine
// without a GPU, and while gpu_cuda lacks a kernel (validation would refuse
// the runs). gpu_cuda_model_emulated_test builds this file against the
// GPU backend's sources on the CPU emulator (TVLAB_GPU_RUN_BINARY names
// that run binary), so the same cases run in every build.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "framework/backend/backend.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

namespace fs = std::filesystem;

#ifndef TVLAB_GPU_RUN_BINARY
#define TVLAB_GPU_RUN_BINARY "experiments/run"
#endif
// The emulated build trains fewer steps (a fiber per CUDA thread is slow):
// the loss is still compared at every step, dropout and clipping included.
#ifndef TVLAB_MAX_STEPS
#define TVLAB_MAX_STEPS 1000000
#endif

// The loss column of train_log.csv, one value per logged step.
std::vector<double> Losses(const std::string& dir) {
  std::istringstream in(ReadFile(dir + "/train_log.csv"));
  std::string line;
  std::vector<double> losses;
  std::getline(in, line);  // header: step,loss,...
  while (std::getline(in, line)) {
    const size_t first = line.find(',');
    const std::string loss = line.substr(first + 1, line.find(',', first + 1) - first - 1);
    if (!loss.empty()) losses.push_back(std::stod(loss));
  }
  return losses;
}

struct Case {
  std::string config, overrides;
  int steps = 8;
  std::string label = "";  // the test's name where config alone repeats
};

class GpuSameTrainingAsReference : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    auto gpu = FindBackend("gpu_cuda");
    if (!gpu.ok()) GTEST_SKIP() << "gpu_cuda not usable here: " << gpu.status().message();
    std::string why;
    if (!(*gpu)->device_present(&why)) GTEST_SKIP() << "gpu_cuda not usable here: " << why;
    const std::vector<std::string> missing = (*gpu)->MissingKernels();
    if (!missing.empty())
      GTEST_SKIP() << "gpu_cuda does not implement " << absl::StrJoin(missing, ", ") << " yet";
  }
};

TEST_P(GpuSameTrainingAsReference, LossCurveWithinFp32Noise) {
  const Case& c = GetParam();
  const std::string base = Runfile("configs/" + c.config + ".pbtxt") + " --set train.steps=" +
                           std::to_string(std::min(c.steps, TVLAB_MAX_STEPS)) +
                           " --set train.log_every=1 --set eval.examples=32 " + c.overrides;
  const std::string ref = TempDir() + "/" + c.config + "_reference";
  const std::string gpu = TempDir() + "/" + c.config + "_gpu";
  fs::remove_all(ref);
  fs::remove_all(gpu);
  RunResult a = RunProgram(TVLAB_GPU_RUN_BINARY,
                           base + " --set runtime.backend=reference --output_dir " + ref);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = RunProgram(TVLAB_GPU_RUN_BINARY,
                           base + " --set runtime.backend=gpu_cuda --output_dir " + gpu);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::vector<double> want = Losses(ref), got = Losses(gpu);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty()) << ReadFile(ref + "/train_log.csv");
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-3) << c.config << " step " << i;
  EXPECT_NE(ReadFile(gpu + "/metrics.json").find("gpu_cuda"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, GpuSameTrainingAsReference,
    ::testing::Values(
        // Encoder-only, with dropout (Philox masks), clipping and accumulation.
        Case{"sort_digits",
             "--set model.dropout=0.1 --set train.clip_grad_norm=0.5 "
             "--set train.grad_accumulation=2", 30},
        // Decoder-only with RoPE, greedy decoding with the KV cache.
        Case{"lm_copy", "--set eval.decode_examples=8", 30},
        // Encoder-decoder, beam search.
        Case{"seq2seq_reverse",
             "--set eval.decode_examples=6 --set eval.decoding.method=BEAM "
             "--set eval.decoding.beam_size=3",
             30}),
    [](const auto& info) { return info.param.config; });

INSTANTIATE_TEST_SUITE_P(
    EveryPlugin, GpuSameTrainingAsReference,
    ::testing::Values(Case{"sort_digits_additive", ""}, Case{"sort_digits_alibi", ""},
                      Case{"sort_digits_dot_product", ""}, Case{"sort_digits_gelu", ""},
                      Case{"sort_digits_gqa", ""}, Case{"sort_digits_learned", ""},
                      Case{"sort_digits_mla", ""}, Case{"sort_digits_mqa", ""},
                      Case{"sort_digits_no_position", ""}, Case{"sort_digits_post_ln", ""},
                      Case{"sort_digits_rmsnorm", ""}, Case{"sort_digits_rope", ""},
                      Case{"sort_digits_swiglu", ""}),
    [](const auto& info) { return info.param.config; });

// The runtime choices the GPU implements apart: the fused attention
// kernels in training and in KV-cache decoding (fp32, against the
// reference's fused attention), and bf16 GEMMs (cuBLAS bf16 operands, fp32
// accumulation, against the reference's rounded operands).
INSTANTIATE_TEST_SUITE_P(
    Runtime, GpuSameTrainingAsReference,
    ::testing::Values(Case{"lm_copy", "--set runtime.attention=fused --set eval.decode_examples=4",
                           8, "fused_attention_lm_copy"},
                      Case{"sort_digits", "--set runtime.precision=bf16", 8, "bf16_sort_digits"}),
    [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace tvlab
