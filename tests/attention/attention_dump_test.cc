// //experiments:attention_dump as a user runs it: after a (short) training
// run it writes, per layer and head, a CSV whose rows are attention weights
// summing to 1, plus one JSON file, under the run's runtime (precision
// included); bad inputs and weights that do not belong to the run's spec are
// clear errors.

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/tvlab/" + path;
}
std::string Tmp(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

int RunTool(const std::string& binary, const std::string& args, std::string* out) {
  FILE* pipe = popen((Runfile(binary) + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out->append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A short GQA run (2 layers, 4 heads), trained once for all tests.
class AttentionDump : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string out;
    ASSERT_EQ(RunTool("experiments/run", Runfile("configs/sort_digits_gqa.pbtxt") +
                                         " --set train.steps=3 --set eval.examples=10"
                                         " --output_dir " + Tmp("run"),
                  &out),
              0)
        << out;
  }
};

TEST_F(AttentionDump, WritesEveryLayerAndHeadWithRowsSummingToOne) {
  std::string out;
  ASSERT_EQ(RunTool("experiments/attention_dump",
                Tmp("run") + " --input '3 1 4 1 5' --output_dir " + Tmp("dump"), &out),
            0)
      << out;
  for (int layer = 0; layer < 2; ++layer)
    for (int head = 0; head < 4; ++head) {
      const std::string path = Tmp("dump") + "/encoder.layers." + std::to_string(layer) +
                               ".attention.head" + std::to_string(head) + ".csv";
      std::vector<std::string> lines = absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty());
      ASSERT_EQ(lines.size(), 6u) << path;  // header + 5 queries
      EXPECT_EQ(lines[0], "query\\key,k0=3,k1=1,k2=4,k3=1,k4=5");
      for (size_t i = 1; i < lines.size(); ++i) {
        std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
        ASSERT_EQ(cells.size(), 6u);
        double sum = 0;
        for (size_t j = 1; j < cells.size(); ++j) {
          double w = std::strtod(cells[j].c_str(), nullptr);
          EXPECT_GE(w, 0.0);
          sum += w;
        }
        EXPECT_NEAR(sum, 1.0, 1e-4) << path << " row " << i;
      }
    }
  std::string json = ReadFile(Tmp("dump") + "/attention.json");
  EXPECT_NE(json.find("\"tokens\": [3, 1, 4, 1, 5]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"layer\": \"encoder.layers.1.attention\""), std::string::npos);
}

TEST_F(AttentionDump, DefaultsToAnEvaluationExampleInsideTheRun) {
  std::string out;
  ASSERT_EQ(RunTool("experiments/attention_dump", Tmp("run") + " --example 2", &out), 0) << out;
  EXPECT_TRUE(std::filesystem::exists(Tmp("run") + "/attention/encoder.layers.0.attention.head3.csv"));
  EXPECT_NE(out.find("2 layers x 4 heads"), std::string::npos) << out;
}

TEST_F(AttentionDump, AnExampleIndexOutsideTheEvaluationSetIsRefused) {
  std::string out;
  // The run evaluates 10 examples: 0..9 exist, 10 and 10^8 do not (a text
  // task used to read past the end of its held-out split here).
  EXPECT_EQ(RunTool("experiments/attention_dump", Tmp("run") + " --example 10", &out), 2);
  EXPECT_NE(out.find("--example 10 is out of range: this run's task has 10 evaluation examples (0..9)"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunTool("experiments/attention_dump", Tmp("run") + " --example 100000000", &out), 2) << out;
}

TEST_F(AttentionDump, RejectsTokensOutsideTheVocabulary) {
  std::string out;
  EXPECT_EQ(RunTool("experiments/attention_dump", Tmp("run") + " --input '3 1 12'", &out), 2);
  EXPECT_NE(out.find("token 12 at position 2 is outside the vocabulary [0, 10)"),
            std::string::npos)
      << out;
}

TEST_F(AttentionDump, RejectsWeightsOfAnotherSpec) {
  // The same weights under a spec with one key/value head instead of two.
  const std::string dir = Tmp("other");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Tmp("run") + "/model.safetensors", dir + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  std::string spec = ReadFile(Tmp("run") + "/spec.resolved.pbtxt");
  const std::string from = "num_kv_heads: 2";
  ASSERT_NE(spec.find(from), std::string::npos) << spec;
  spec.replace(spec.find(from), from.size(), "num_kv_heads: 1");
  std::ofstream(dir + "/spec.resolved.pbtxt") << spec;
  std::string out;
  EXPECT_EQ(RunTool("experiments/attention_dump", dir, &out), 2);
  // w_k is (G * hs, C): (32, 64) saved, (16, 64) expected.
  EXPECT_NE(out.find("tensor 'encoder.layers.0.attention.w_k.weight' has shape"), std::string::npos)
      << out;
  EXPECT_NE(out.find("32, 64"), std::string::npos) << out;
  EXPECT_NE(out.find("but the model expects"), std::string::npos) << out;
}

// The dump runs under the run's runtime (ApplyRuntime), precision included:
// the same weights dumped as a bf16 run give other attention weights than
// as an fp32 run, since the projections' GEMMs round their operands to
// bf16. (attention_dump used to set the backend alone: both were fp32.)
TEST_F(AttentionDump, DumpsUnderTheRunsPrecision) {
  std::string dumps[2];
  const char* precisions[2] = {"fp32", "bf16"};
  for (int i = 0; i < 2; ++i) {
    const std::string dir = Tmp(std::string("precision_") + precisions[i]);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(Tmp("run") + "/model.safetensors", dir + "/model.safetensors",
                               std::filesystem::copy_options::overwrite_existing);
    const std::string spec = ReadFile(Tmp("run") + "/spec.resolved.pbtxt");
    const std::regex runtime(R"(runtime \{[^}]*\})");
    ASSERT_TRUE(std::regex_search(spec, runtime)) << spec;
    std::ofstream(dir + "/spec.resolved.pbtxt") << std::regex_replace(
        spec, runtime, std::string("runtime { backend: \"reference\" precision: \"") + precisions[i] + "\" }");
    std::string out;
    ASSERT_EQ(RunTool("experiments/attention_dump", dir + " --input '3 1 4 1 5' --output_dir " + dir + "/dump", &out),
              0)
        << out;
    dumps[i] = ReadFile(dir + "/dump/encoder.layers.1.attention.head0.csv");
    ASSERT_FALSE(dumps[i].empty());
  }
  EXPECT_NE(dumps[0], dumps[1]) << "the bf16 run dumped fp32 attention weights: runtime.precision ignored";
}

TEST_F(AttentionDump, CommandLineMistakesExitTwoAndHelpListsEveryFlag) {
  std::string help, unknown, bad_value;
  EXPECT_EQ(RunTool("experiments/attention_dump", "--help", &help), 0) << help;
  for (const char* flag : {"--input ", "--example ", "--output_dir "})
    EXPECT_NE(help.find(std::string("\n  ") + flag), std::string::npos) << flag << " in " << help;
  EXPECT_EQ(RunTool("experiments/attention_dump", Tmp("run") + " --frobnicate", &unknown), 2);
  EXPECT_NE(unknown.find("error: unknown flag '--frobnicate'"), std::string::npos) << unknown;
  EXPECT_EQ(RunTool("experiments/attention_dump", Tmp("run") + " --example x", &bad_value), 2);
  EXPECT_NE(bad_value.find("--example: 'x' is not an integer"), std::string::npos) << bad_value;
}

TEST_F(AttentionDump, ADirectoryThatIsNotARunIsNamed) {
  std::string out;
  EXPECT_EQ(RunTool("experiments/attention_dump", Tmp("nowhere"), &out), 2);
  EXPECT_NE(out.find("is not a run directory"), std::string::npos) << out;
}


// An --output_dir that cannot be made (a file in the way, /proc) used to be
// an uncaught std::filesystem::filesystem_error (abort).
TEST_F(AttentionDump, AnUnwritableOutputDirIsACleanError) {
  const std::string file = Tmp("plain_file");
  std::ofstream(file) << "x";
  for (const std::string& dir : {file, file + "/below", std::string("/proc/tvlab_no_such_dir")}) {
    std::string out;
    const int code = RunTool("experiments/attention_dump", Tmp("run") + " --output_dir " + dir, &out);
    EXPECT_TRUE(code == 1 || code == 2) << code << " " << out;
    EXPECT_NE(out.find("error: cannot create the --output_dir: "), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace tvlab
