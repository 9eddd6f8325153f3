// One WSD stable phase, several decays (framework/train/schedule_resume.h):
// a wsd run killed in its stable phase (checkpoint at step 20) is copied
// twice and each copy resumed with --set into another length and decay;
// each equals, bit for bit, a run started with those settings. Resuming
// from a checkpoint the new decay would already have changed, or changing
// anything but train.steps and the schedule's options, is refused.

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

const char kSpec[] =
    "name: \"wsd_resume\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 "
    "dropout: 0.1 }\ntask { plugin: \"sort_digits\" }\n"
    "train { steps: 60 batch_size: 16 log_every: 1 checkpoint_every: 10 "
    "lr_schedule { plugin: \"wsd\" options { [type.googleapis.com/tvlab.WsdOptions] "
    "{ warmup_steps: 5 decay_steps: 10 } } } }\n"
    "eval { examples: 100 }\n";

std::string SpecFile() {
  std::string path = TempDir() + "/wsd_resume.pbtxt";
  std::ofstream(path) << kSpec;
  return path;
}

TEST(WsdResume, OneStablePhaseResumesIntoSeveralDecays) {
  const std::string stable = TempDir() + "/stable";
  RunResult killed = RunProgram("tests/run_with_crash_hook",
                                SpecFile() + " --output_dir " + stable + " --crash_after_step 24");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  for (const auto& [steps, decay] : {std::pair<int, int>{40, 10}, {30, 5}}) {
    const std::string settings = " --set train.steps=" + std::to_string(steps) +
                                 " --set train.lr_schedule.options.decay_steps=" + std::to_string(decay);
    const std::string branch = TempDir() + "/decay_" + std::to_string(steps), fresh = branch + "_fresh";
    std::filesystem::copy(stable, branch, std::filesystem::copy_options::recursive);
    RunResult resumed = RunBinary("--resume " + branch + settings);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("at step 20"), std::string::npos) << resumed.output;
    RunResult whole = RunBinary(SpecFile() + settings + " --output_dir " + fresh);
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    EXPECT_NE(TrainLogLosses(fresh).find("\n" + std::to_string(steps - 1) + ","), std::string::npos) << TrainLogLosses(fresh);
    EXPECT_EQ(TrainLogLosses(branch), TrainLogLosses(fresh)) << steps;
    EXPECT_EQ(ReadFile(branch + "/model.safetensors"), ReadFile(fresh + "/model.safetensors")) << steps;
  }
}

TEST(WsdResume, RefusesADecayTheCheckpointHasPassedAndOtherFields) {
  const std::string stable = TempDir() + "/stable_refused";
  RunResult killed = RunProgram("tests/run_with_crash_hook",
                                SpecFile() + " --output_dir " + stable + " --crash_after_step 24");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  // Decay over steps 15..24: steps 15..19, already taken at the full rate, would change.
  RunResult late = RunBinary("--resume " + stable +
                             " --set train.steps=25 --set train.lr_schedule.options.decay_steps=10");
  EXPECT_EQ(late.exit_code, 2) << late.output;
  EXPECT_NE(late.output.find("step 15 would have had rate"), std::string::npos) << late.output;
  RunResult other = RunBinary("--resume " + stable + " --set model.dropout=0");
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("may change train.steps and train.lr_schedule.options.* only"), std::string::npos)
      << other.output;
}

}  // namespace
}  // namespace tvlab
