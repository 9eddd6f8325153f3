// A run killed midway and resumed gives the same losses, bit for bit, and the
// same final weights as a run never interrupted (CPU, same thread count).
// Also: --init_from / --eval_only, and checkpoints that do not match the spec.

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

const char kSpec[] =
    "name: \"resume\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 2 num_heads: 2 "
    "dropout: 0.1 }\ntask { plugin: \"sort_digits\" }\n"
    "train { steps: 40 batch_size: 16 log_every: 1 checkpoint_every: 10 grad_accumulation: 2 "
    "clip_grad_norm: 1.0 lr_schedule { kind: WARMUP_COSINE warmup_steps: 5 } }\n"
    "eval { examples: 100 }\n";

std::string SpecFile() {
  std::string path = TempDir() + "/resume.pbtxt";
  std::ofstream(path) << kSpec;
  return path;
}

TEST(Resume, KilledAndResumedRunEqualsUninterruptedRunBitForBit) {
  std::string whole = TempDir() + "/whole", broken = TempDir() + "/broken";
  RunResult a = RunBinary(SpecFile() + " --output_dir " + whole);
  ASSERT_EQ(a.exit_code, 0) << a.output;

  // The same run binary with a trainer hook that exits abruptly after step 24.
  RunResult killed = RunProgram("tests/run_with_crash_hook",
                                SpecFile() + " --output_dir " + broken + " --crash_after_step 24");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  EXPECT_FALSE(std::filesystem::exists(broken + "/metrics.json"));
  // Steps 20..24 were logged after the last checkpoint (step 20) and are redone.
  EXPECT_NE(TrainLogLosses(broken).find("\n24,"), std::string::npos);

  RunResult resumed = RunBinary("--resume " + broken);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 20"), std::string::npos) << resumed.output;
  EXPECT_EQ(TrainLogLosses(broken), TrainLogLosses(whole));
  EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(whole + "/model.safetensors"));
  EXPECT_EQ(JsonNumber(ReadFile(broken + "/metrics.json"), "token_accuracy"),
            JsonNumber(ReadFile(whole + "/metrics.json"), "token_accuracy"));

  RunResult again = RunBinary("--resume " + broken);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("nothing to resume"), std::string::npos) << again.output;
}

// --resume trusted state.json and the run's spec: next_step -5 exited 0 with
// "diverged at step -4", 2000000000 exited 0 at once with a 0 loss, 0
// retrained on trained weights, and train.steps lowered below the checkpoint
// exited 0 recording the later weights as the shorter run. Each is refused,
// naming the file, and the untouched run still resumes exactly.
TEST(Resume, AnEditedStateOrAShortenedSpecIsRefusedAndTheRunStillResumes) {
  std::string run = TempDir() + "/tampered";
  ASSERT_EQ(RunProgram("tests/run_with_crash_hook", SpecFile() + " --output_dir " + run + " --crash_after_step 24")
                .exit_code,
            137);
  const std::string state = run + "/checkpoints/step_0000020/state.json", spec = run + "/spec.resolved.pbtxt";
  const std::string good_state = ReadFile(state), good_spec = ReadFile(spec);
  auto with = [](std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };
  for (const char* next_step : {"-5", "0", "2000000000", "10"}) {
    std::ofstream(state, std::ios::trunc) << with(good_state, "\"next_step\": 20", std::string("\"next_step\": ") + next_step);
    RunResult r = RunBinary("--resume " + run);
    EXPECT_EQ(r.exit_code, 1) << next_step << ": " << r.output;
    EXPECT_NE(r.output.find(state + ": next_step is " + next_step + ", but the checkpoint is step_0000020"),
              std::string::npos)
        << r.output;
  }
  std::ofstream(state, std::ios::trunc) << good_state;
  std::ofstream(spec, std::ios::trunc) << with(good_spec, "steps: 40", "steps: 15");
  RunResult shortened = RunBinary("--resume " + run);
  EXPECT_EQ(shortened.exit_code, 1) << shortened.output;
  EXPECT_NE(shortened.output.find("step_0000020 is at step 20, beyond train.steps 15 of the spec"), std::string::npos)
      << shortened.output;
  std::ofstream(spec, std::ios::trunc) << good_spec;
  RunResult resumed = RunBinary("--resume " + run);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 20"), std::string::npos) << resumed.output;
}

// Each optimizer plugin's state goes through the checkpoint: killed after
// step 24 and resumed from step 20, the run equals the uninterrupted one bit
// for bit (adamw, the default, above).
TEST(Resume, EveryOptimizersStateResumesBitForBit) {
  const std::vector<std::pair<std::string, std::string>> optimizers = {
      {"sgd",
       "--set train.optimizer.plugin=sgd --set train.optimizer.options.momentum=0.9 "
       "--set train.optimizer.options.nesterov=true --set train.optimizer.options.lr=0.05"},
      {"lion", "--set train.optimizer.plugin=lion"},
      {"muon", "--set train.optimizer.plugin=muon"},
      {"adafactor", "--set train.optimizer.plugin=adafactor --set train.optimizer.options.beta1=0.9"}};
  for (const auto& [name, optimizer] : optimizers) {
    const std::string whole = TempDir() + "/whole_" + name, broken = TempDir() + "/broken_" + name;
    RunResult a = RunBinary(SpecFile() + " " + optimizer + " --output_dir " + whole);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    RunResult killed = RunProgram("tests/run_with_crash_hook", SpecFile() + " " + optimizer + " --output_dir " +
                                                                   broken + " --crash_after_step 24");
    ASSERT_EQ(killed.exit_code, 137) << killed.output;
    RunResult resumed = RunBinary("--resume " + broken);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("at step 20"), std::string::npos) << resumed.output;
    EXPECT_EQ(TrainLogLosses(broken), TrainLogLosses(whole)) << optimizer;
    EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(whole + "/model.safetensors")) << optimizer;
    EXPECT_NE(ReadFile(whole + "/metrics.json").find("\"optimizer_state_bytes\""), std::string::npos);
  }
}

// A full disk while the step-20 checkpoint is written (injected through the
// filesystem interface by //tests:run_with_faults): the run fails, the step-10
// checkpoint stays the latest and intact, and resuming from it gives the
// uninterrupted run bit for bit.
TEST(Resume, FullDiskDuringACheckpointKeepsThePreviousOneAndResumesBitForBit) {
  std::string whole = TempDir() + "/whole_for_enospc", broken = TempDir() + "/enospc";
  RunResult a = RunBinary(SpecFile() + " --output_dir " + whole);
  ASSERT_EQ(a.exit_code, 0) << a.output;

  RunResult failed = RunProgram("tests/run_with_faults",
                                SpecFile() + " --output_dir " + broken +
                                    " --fault_op append --fault_path .step_0000020.partial/optimizer "
                                    "--fault_error ENOSPC");
  ASSERT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_NE(failed.output.find("optimizer.safetensors.tmp': No space left on device"), std::string::npos)
      << failed.output;
  EXPECT_EQ(ReadFile(broken + "/checkpoints/latest"), "step_0000010\n");
  EXPECT_FALSE(std::filesystem::exists(broken + "/checkpoints/step_0000020"));
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    EXPECT_EQ(ReadFile(broken + "/checkpoints/step_0000010/" + file),
              ReadFile(whole + "/checkpoints/step_0000010/" + file)) << file;
  }
  EXPECT_EQ(JsonNumber(ReadFile(broken + "/checkpoints/step_0000010/state.json"), "next_step"), 10);
  EXPECT_FALSE(std::filesystem::exists(broken + "/metrics.json"));

  RunResult resumed = RunBinary("--resume " + broken);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 10"), std::string::npos) << resumed.output;
  EXPECT_EQ(TrainLogLosses(broken), TrainLogLosses(whole));
  EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(whole + "/model.safetensors"));
}

// A crash after the step-20 checkpoint was renamed into place but before
// `latest` named it: resuming starts again from step 10, writes step 20 over
// the orphaned directory, and ends bit for bit like the uninterrupted run.
TEST(Resume, CrashBeforeLatestIsUpdatedResumesFromThePreviousCheckpoint) {
  std::string whole = TempDir() + "/whole_for_crash", broken = TempDir() + "/crash_latest";
  ASSERT_EQ(RunBinary(SpecFile() + " --output_dir " + whole).exit_code, 0);
  RunResult killed = RunProgram("tests/run_with_faults",
                                SpecFile() + " --output_dir " + broken +
                                    " --fault_op rename --fault_path checkpoints/latest --fault_nth 2 "
                                    "--fault_error crash");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  EXPECT_EQ(ReadFile(broken + "/checkpoints/latest"), "step_0000010\n");
  EXPECT_TRUE(std::filesystem::exists(broken + "/checkpoints/step_0000020/model.safetensors"));

  RunResult resumed = RunBinary("--resume " + broken);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 10"), std::string::npos) << resumed.output;
  EXPECT_EQ(TrainLogLosses(broken), TrainLogLosses(whole));
  EXPECT_EQ(ReadFile(broken + "/model.safetensors"), ReadFile(whole + "/model.safetensors"));
}

TEST(Resume, EvalOnlyReproducesTheRunsMetrics) {
  std::string run = TempDir() + "/evalsrc", eval = TempDir() + "/evalonly";
  ASSERT_EQ(RunBinary(SpecFile() + " --set train.steps=12 --output_dir " + run).exit_code, 0);
  RunResult r = RunBinary(SpecFile() + " --set train.steps=12 --eval_only --init_from " + run +
                          " --output_dir " + eval);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(JsonNumber(ReadFile(eval + "/metrics.json"), "token_accuracy"),
            JsonNumber(ReadFile(run + "/metrics.json"), "token_accuracy"));
  EXPECT_EQ(JsonNumber(ReadFile(eval + "/metrics.json"), "steps"), 0);
}

TEST(Resume, MismatchedCheckpointNamesTheTensor) {
  std::string run = TempDir() + "/small";
  ASSERT_EQ(RunBinary(SpecFile() + " --set train.steps=2 --output_dir " + run).exit_code, 0);
  RunResult r = RunBinary(SpecFile() + " --set model.d_model=32 --init_from " + run +
                          " --output_dir " + TempDir() + "/big");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("tensor 'embedding.weight' has shape (10, 16) but the model expects (10, 32)"),
            std::string::npos) << r.output;
  RunResult flags = RunBinary(SpecFile() + " --resume " + run);
  EXPECT_EQ(flags.exit_code, 2);
  EXPECT_NE(flags.output.find("--resume takes its spec from the run directory"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
