// //experiments/hf:export and --init_from as a careless user meets them: an
// export into a non-empty directory is refused unless --overwrite (it used
// to replace the user's config.json silently), and --init_from a directory
// that is neither an HF directory nor a tvlab run says which files it lacks
// (it used to fail on tensor names, as a tvlab weight file).

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/run_binary_util.h"

namespace tvlab {
namespace {

const char kLlamaSpec[] = R"pb(name: "llama"
model {
  family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 dropout: 0 bias: false head_bias: false
  position { plugin: "rope" } norm { plugin: "rmsnorm" placement: "pre_ln" } ffn { plugin: "swiglu" }
}
task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
  path: "/usr/share/common-licenses/GPL-3" context_length: 8 } } }
train { steps: 2 batch_size: 4 }
eval { examples: 4 })pb";

RunResult Export(const std::string& args) { return RunProgram("experiments/hf/export", args); }

class HfCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string spec = TempDir() + "/llama.pbtxt";
    std::ofstream(spec) << kLlamaSpec;
    RunResult trained = RunBinary(spec + " --output_dir " + Run());
    ASSERT_EQ(trained.exit_code, 0) << trained.output;
  }
  static std::string Run() { return TempDir() + "/run"; }
};

TEST_F(HfCli, ExportRefusesANonEmptyDirectoryUnlessOverwrite) {
  const std::string out = TempDir() + "/hf";
  std::filesystem::remove_all(out);
  ASSERT_EQ(Export("--run_dir " + Run() + " --format hf --out " + out).exit_code, 0);
  std::ofstream(out + "/config.json") << "{\"mine\": true}";  // the user's edit
  RunResult again = Export("--run_dir " + Run() + " --format hf --out " + out);
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find(out + " is not empty"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("--overwrite"), std::string::npos) << again.output;
  EXPECT_EQ(ReadFile(out + "/config.json"), "{\"mine\": true}");  // untouched
  RunResult forced = Export("--run_dir " + Run() + " --format hf --out " + out + " --overwrite");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_NE(ReadFile(out + "/config.json").find("LlamaForCausalLM"), std::string::npos);
  RunResult file = Export("--run_dir " + Run() + " --format hf --out " + out + "/config.json");
  EXPECT_EQ(file.exit_code, 2) << file.output;
  EXPECT_NE(file.output.find("exists and is not a directory"), std::string::npos) << file.output;
}

TEST_F(HfCli, InitFromADirectoryWithoutConfigSaysWhatItLacks) {
  const std::string hf = TempDir() + "/hf_for_import", lost = TempDir() + "/lost_config";
  std::filesystem::remove_all(hf);
  ASSERT_EQ(Export("--run_dir " + Run() + " --format hf --out " + hf).exit_code, 0);
  const std::string spec = Run() + "/spec.resolved.pbtxt";
  // The export imports back (the round trip is the baseline of this test).
  RunResult ok = RunBinary(spec + " --init_from " + hf + " --eval_only --output_dir " + TempDir() + "/eval_ok");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  std::filesystem::create_directories(lost);
  std::filesystem::copy_file(hf + "/model.safetensors", lost + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  RunResult r = RunBinary(spec + " --init_from " + lost + " --eval_only --output_dir " + TempDir() + "/eval_lost");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(lost + " is neither a Hugging Face directory (it has no config.json) nor a tvlab run"),
            std::string::npos)
      << r.output;
  // A tvlab run directory still loads as before.
  RunResult run_dir = RunBinary(spec + " --init_from " + Run() + " --eval_only --output_dir " + TempDir() + "/eval_run");
  EXPECT_EQ(run_dir.exit_code, 0) << run_dir.output;
}

}  // namespace
}  // namespace tvlab
