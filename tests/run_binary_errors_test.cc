// The run binary turns bad input into a clear message and a non-zero exit,
// never a crash, and writes nothing for a spec it rejected.

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

std::string Spec(const std::string& name, const std::string& text) {
  std::string path = TempDir() + "/" + name + ".pbtxt";
  std::ofstream(path) << text;
  return path;
}

const char kSpec[] =
    "name: \"tiny\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 }\n"
    "task { plugin: \"sort_digits\" }\ntrain { steps: 2 }\neval { examples: 10 }\n";

TEST(RunBinary, ListsPluginsByKind) {
  RunResult r = RunBinary("--list_plugins");
  EXPECT_EQ(r.exit_code, 0);
  // One line per kind, naming the spec field, listing (at least) the
  // foundation's plugins.
  for (const char* expected : {"attention score (model.attention.score, default scaled_dot_product): ",
                               "attention layout (model.attention.layout, default mha): ",
                               "position encoding (model.position.plugin, default sinusoidal): ",
                               "normalization (model.norm.plugin, default layernorm): ",
                               "norm placement (model.norm.placement, default pre_ln): ",
                               "ffn (model.ffn.plugin, default relu): ", "task (task.plugin): ",
                               "optimizer (train.optimizer.plugin, default adamw): ",
                               "schedule (train.lr_schedule.plugin, default constant): ",
                               "backend (runtime.backend): ",
                               "attention window (model.attention.window, default 0 = full attention)",
                               "recurrent mixers (attention layouts with a fixed-size decoding state",
                               "logit_softcap (float, 0 = off), sink NONE|OFF_BY_ONE|LEARNED, "
                               "qk_norm NONE|RMSNORM|LAYERNORM, output_gate "
                               "NONE|HEADWISE|ELEMENTWISE"}) {
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << " in " << r.output;
  }
  for (const char* plugin : {"scaled_dot_product", "mha", "sinusoidal", "none", "layernorm",
                             "pre_ln", "post_ln", "relu", "sort_digits", "cpu_onednn", "adamw", "sgd",
                             "lion", "muon", "adafactor", "warmup_cosine", "wsd"}) {
    EXPECT_NE(r.output.find(plugin), std::string::npos) << plugin;
  }
  // Each backend's GEMM precisions (runtime.precision).
  EXPECT_NE(r.output.find("precision (runtime.precision, default fp32): "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("reference fp32|tf32|bf16"), std::string::npos) << r.output;
  // The option fields of each plugin with options, nested messages in braces.
  EXPECT_NE(r.output.find("  options (model.position.options): "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rope { base, pairing, rotary_fraction, scaling { method, factor, "),
            std::string::npos)
      << r.output;
  // Which scores, positions and layouts fuse, and what a combination needs.
  EXPECT_NE(r.output.find("(not additive)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("; attention layouts "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fuses when its score, position and layout all do"), std::string::npos) << r.output;
}

TEST(RunBinary, BadFlagsPrintUsage) {
  RunResult r = RunBinary("--frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("error: unknown flag '--frobnicate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("usage:"), std::string::npos);
  EXPECT_NE(r.output.find("--help lists every flag"), std::string::npos);
  EXPECT_EQ(RunBinary("").exit_code, 2);
  RunResult no_value = RunBinary(Spec("a", kSpec) + " --set");
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_NE(no_value.output.find("error: --set needs a value"), std::string::npos) << no_value.output;
  RunResult not_int = RunBinary(Spec("a", kSpec) + " --jobs x");
  EXPECT_EQ(not_int.exit_code, 2);
  EXPECT_NE(not_int.output.find("--jobs: 'x' is not an integer"), std::string::npos) << not_int.output;
  RunResult grid_flag = RunBinary(Spec("a", kSpec) + " --jobs 2");
  EXPECT_EQ(grid_flag.exit_code, 2);
  EXPECT_NE(grid_flag.output.find("--jobs is a grid flag"), std::string::npos) << grid_flag.output;
}

// The crash hook of the resume tests lives in a test-only binary
// (//tests:run_with_crash_hook), not in the production command line.
TEST(RunBinary, HasNoTestOnlyFlags) {
  for (const char* flag : {"--debug_crash_after_step", "--crash_after_step"}) {
    RunResult r = RunBinary(Spec("a", kSpec) + " " + flag + " 1");
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_NE(r.output.find(std::string("error: unknown flag '") + flag + "'"), std::string::npos)
        << r.output;
  }
}

TEST(RunBinary, HelpListsEveryFlagWithItsHelpText) {
  RunResult r = RunBinary("--help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("usage: bazel run //experiments:run -- SPEC.pbtxt"), std::string::npos)
      << r.output;
  for (const char* flag : {"--set ", "--output_dir ", "--resume ", "--init_from ", "--eval_only ",
                           "--list_plugins ", "--jobs ", "--report_only ", "--dry_run ",
                           "--retry_failed "}) {
    EXPECT_NE(r.output.find(std::string("\n  ") + flag), std::string::npos) << flag << " in " << r.output;
  }
  EXPECT_NE(r.output.find("override one spec field"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("flagfile"), std::string::npos) << r.output;  // absl's own flags
  EXPECT_EQ(r.output.find("crash"), std::string::npos) << r.output;
}

// absl keeps only the last value of a repeated flag; every --set applies, in order.
TEST(RunBinary, EverySetAppliesInOrder) {
  RunResult first = RunBinary(Spec("a", kSpec) + " --set model.num_heads=3 --set train.steps=1");
  EXPECT_EQ(first.exit_code, 2);
  EXPECT_NE(first.output.find("must be divisible by num_heads (3)"), std::string::npos) << first.output;
  RunResult last = RunBinary(Spec("a", kSpec) + " --set model.num_heads=2 --set=model.num_heads=3");
  EXPECT_EQ(last.exit_code, 2);
  EXPECT_NE(last.output.find("must be divisible by num_heads (3)"), std::string::npos) << last.output;
}

TEST(RunBinary, BadSpecIsRejectedBeforeAnyRunDirectoryExists) {
  std::string out = TempDir() + "/never";
  RunResult r = RunBinary(Spec("bad", kSpec) + " --set model.num_heads=3 --output_dir " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("model.num_heads: d_model (16) must be divisible by num_heads (3)"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

const char kDivergingSpec[] =
    "name: \"nan\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 "
    "num_heads: 2 }\ntask { plugin: \"sort_digits\" }\ntrain { steps: 200 optimizer { "
    "adamw { lr: 1e6 } } }\n";

TEST(RunBinary, DivergingLossIsARecordedResult) {
  std::string out = TempDir() + "/nan_run";
  RunResult r = RunBinary(Spec("nan", kDivergingSpec) + " --output_dir " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: training diverged at step "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Lower train.optimizer.options.lr"), std::string::npos) << r.output;
  const std::string metrics = ReadFile(out + "/metrics.json");
  EXPECT_NE(metrics.find("\"diverged_at_step\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"diverged_loss\""), std::string::npos) << metrics;
  // Nothing was evaluated: no evaluation metric is written as a fake 0.
  EXPECT_EQ(metrics.find("token_accuracy"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("eval_loss"), std::string::npos) << metrics;
}

TEST(RunBinary, DivergingLossAboveTheThresholdIsRecorded) {
  // A loss of ~2.3 at init is above 0.5: step 0 diverges by the threshold.
  std::string out = TempDir() + "/threshold_run";
  RunResult r = RunBinary(Spec("thr", kSpec) + " --set train.divergence_loss=0.5 --output_dir " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: training diverged at step 0 (loss "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("> train.divergence_loss 0.5"), std::string::npos) << r.output;
  EXPECT_NE(ReadFile(out + "/metrics.json").find("\"diverged_at_step\": 0"), std::string::npos);
}

TEST(RunBinary, FailOnDivergenceStopsWithAClearMessage) {
  std::string out = TempDir() + "/nan_fail_run";
  RunResult r = RunBinary(Spec("nanfail", kDivergingSpec) + " --set train.fail_on_divergence=true --output_dir " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("training loss became"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Lower train.optimizer.options.lr"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/metrics.json"));
}

TEST(RunBinary, NegativeDivergenceLossIsRejected) {
  RunResult r = RunBinary(Spec("negthr", kSpec) + " --set train.divergence_loss=-1 --output_dir " +
                          TempDir() + "/never_thr");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("train.divergence_loss must be >= 0 (got -1)"), std::string::npos) << r.output;
}

// A byte-level LM trained at context 16 on the GPL-3 text (35149 bytes; the
// last tenth, 3514 bytes, held out).
std::string TextLmSpec(const std::string& position, int eval_context, int examples = 13) {
  return absl::StrCat(
      "name: \"lm\"\nmodel { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 position { plugin: \"",
      position, "\" } }\ntask { plugin: \"text_lm\" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "
      "\"/usr/share/common-licenses/GPL-3\" context_length: 16 } } }\ntrain { steps: 2 batch_size: 4 }\n"
      "eval { examples: ", examples, " context_length: ", eval_context, " }\n");
}

TEST(RunBinary, EvaluatesAtALongerContextThanTraining) {
  for (const char* position : {"sinusoidal", "rope", "alibi"}) {
    std::string out = TempDir() + "/long_eval_" + position;
    RunResult r = RunBinary(Spec(std::string("long_") + position, TextLmSpec(position, 256)) +
                            " --output_dir " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string metrics = ReadFile(out + "/metrics.json");
    // (3514 - 1) / 256 = 13 windows of 256 bytes, where context 16 gives 219.
    EXPECT_NE(metrics.find("\"eval_examples\": 13,"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("\"perplexity\""), std::string::npos) << metrics;
    // The model is still built for the training context.
    EXPECT_NE(ReadFile(out + "/spec.resolved.pbtxt").find("max_seq_len: 16"), std::string::npos);
  }
  // There are exactly 13 windows of 256 held-out bytes: a 14th is refused.
  RunResult more = RunBinary(Spec("long_14", TextLmSpec("rope", 256, 14)) + " --output_dir " +
                             TempDir() + "/never_14");
  EXPECT_EQ(more.exit_code, 2) << more.output;
  EXPECT_NE(more.output.find("holds only 13 held-out examples"), std::string::npos) << more.output;
}

TEST(RunBinary, LearnedPositionsCannotEvaluatePastTheirTable) {
  RunResult r = RunBinary(Spec("long_learned", TextLmSpec("learned", 64)) + " --output_dir " +
                          TempDir() + "/never_learned");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("eval.context_length (64) is past the positions 'learned' has: its table has "
                          "model.max_seq_len = 16 rows"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Set eval.context_length <= 16, or use a position plugin that extrapolates"),
            std::string::npos) << r.output;
  // Within the table it is fine.
  std::string out = TempDir() + "/learned_same";
  RunResult ok = RunBinary(Spec("same_learned", TextLmSpec("learned", 16)) + " --output_dir " + out);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(RunBinary, EvalContextLengthOnATaskWithoutItIsRejected) {
  RunResult r = RunBinary(Spec("sort_ctx", kSpec) + " --set eval.context_length=32 --output_dir " +
                          TempDir() + "/never_ctx");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("eval.context_length (32): task 'sort_digits' evaluates at its own length (8) and "
                          "cannot change it"),
            std::string::npos) << r.output;
  RunResult too_long = RunBinary(Spec("too_long", TextLmSpec("rope", 5000)) + " --output_dir " +
                                 TempDir() + "/never_long");
  EXPECT_EQ(too_long.exit_code, 2) << too_long.output;
  EXPECT_NE(too_long.output.find("too few for one evaluation window of 5000 tokens"), std::string::npos)
      << too_long.output;
}

TEST(RunBinary, MissingSpecFileIsNamed) {
  RunResult r = RunBinary("/no/such/spec.pbtxt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("cannot read spec file '/no/such/spec.pbtxt'"), std::string::npos) << r.output;
}

TEST(RunBinary, RelativePathsResolveAgainstTheUsersDirectory) {
  std::string dir = TempDir() + "/user_cwd";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/mine.pbtxt") << kSpec;
  RunResult ok = [&] {
    setenv("BUILD_WORKING_DIRECTORY", dir.c_str(), 1);
    RunResult res = RunBinary("mine.pbtxt --output_dir out");
    unsetenv("BUILD_WORKING_DIRECTORY");
    return res;
  }();
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/metrics.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/model.safetensors"));
  // A finished run is never overwritten.
  setenv("BUILD_WORKING_DIRECTORY", dir.c_str(), 1);
  RunResult again = RunBinary("mine.pbtxt --output_dir out");
  unsetenv("BUILD_WORKING_DIRECTORY");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("already holds a finished run"), std::string::npos) << again.output;
}

}  // namespace
}  // namespace tvlab
