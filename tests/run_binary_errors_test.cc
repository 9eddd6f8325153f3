// The run binary turns bad input into a clear message and a non-zero exit,
// never a crash, and writes nothing for a spec it rejected.

#include <filesystem>
#include <fstream>

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
                               "backend (runtime.backend): "}) {
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << " in " << r.output;
  }
  for (const char* plugin : {"scaled_dot_product", "mha", "sinusoidal", "none", "layernorm",
                             "pre_ln", "post_ln", "relu", "sort_digits", "cpu_onednn"}) {
    EXPECT_NE(r.output.find(plugin), std::string::npos) << plugin;
  }
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

TEST(RunBinary, DivergingLossStopsWithAClearMessage) {
  std::string spec = Spec("nan",
                          "name: \"nan\"\nmodel { family: ENCODER_ONLY d_model: 16 num_layers: 1 "
                          "num_heads: 2 }\ntask { plugin: \"sort_digits\" }\ntrain { steps: 200 optimizer { "
                          "adamw { lr: 1e6 } } }\n");
  std::string out = TempDir() + "/nan_run";
  RunResult r = RunBinary(spec + " --output_dir " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("training loss became"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Lower train.optimizer.adamw.lr"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/metrics.json"));
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
