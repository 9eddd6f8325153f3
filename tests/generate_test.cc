// //experiments:generate on a freshly trained run: the cached and uncached
// paths print the same text, every method runs, and bad input is an error.

#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

RunResult Generate(const std::string& args) {
  std::string command = Runfile("experiments/generate") + " " + args + " 2>&1";
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(Generate, FromATrainedRun) {
  std::string spec = TempDir() + "/rev.pbtxt", run = TempDir() + "/rev";
  std::ofstream(spec) << "name: \"rev\"\nmodel { family: ENCODER_DECODER d_model: 32 num_layers: 1 "
                         "num_heads: 2 dropout: 0 }\ntask { plugin: \"reverse\" options { [type.googleapis.com/tvlab.ReverseOptions] { max_length: 6 } } }\n"
                         "train { steps: 300 batch_size: 32 optimizer { adamw { lr: 3e-3 } } }\n"
                         "eval { examples: 50 decode_examples: 20 }\n";
  ASSERT_EQ(RunBinary(spec + " --output_dir " + run).exit_code, 0);
  RunResult cached = Generate("--run_dir " + run + " --prompt 31415");
  ASSERT_EQ(cached.exit_code, 0) << cached.output;
  EXPECT_FALSE(cached.output.empty());
  RunResult uncached = Generate("--run_dir " + run + " --prompt 31415 --no_cache");
  EXPECT_EQ(uncached.output, cached.output);
  for (const char* method : {"beam", "sample", "greedy"}) {
    RunResult r = Generate("--run_dir " + run + " --prompt 271 --method " + method);
    EXPECT_EQ(r.exit_code, 0) << method << ": " << r.output;
  }
  RunResult bad = Generate("--run_dir " + run + " --prompt xyz");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("has no tokens this task knows"), std::string::npos) << bad.output;
  RunResult missing = Generate("--run_dir /no/such/run --prompt 1");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("cannot read spec file"), std::string::npos) << missing.output;
  RunResult method = Generate("--run_dir " + run + " --prompt 1 --method nucleus");
  EXPECT_EQ(method.exit_code, 2);
  EXPECT_NE(method.output.find("--method 'nucleus' is not a decoding method; use greedy, sample or beam"),
            std::string::npos)
      << method.output;
}

TEST(Generate, CommandLineMistakesExitTwoAndHelpListsEveryFlag) {
  RunResult help = Generate("--help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  for (const char* flag : {"--run_dir ", "--prompt ", "--method ", "--max_new_tokens ",
                           "--temperature ", "--top_k ", "--beam_size ", "--length_penalty ",
                           "--seed ", "--no_cache "}) {
    EXPECT_NE(help.output.find(std::string("\n  ") + flag), std::string::npos) << flag;
  }
  RunResult unknown = Generate("--run_dir x --prompt 1 --bogus");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("error: unknown flag '--bogus'"), std::string::npos) << unknown.output;
  RunResult required = Generate("--prompt 1");
  EXPECT_EQ(required.exit_code, 2);
  EXPECT_NE(required.output.find("--run_dir and --prompt are required"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
