// Replays the HF config fuzzer's seed corpus with the normal toolchain on
// every test run (tools/fuzz.sh builds the libFuzzer binary with clang), and
// checks each seed against the real Llama architecture and a real export's
// config: accepted, or refused by the check its name says.

#include <string>

#include "experiments/hf/hf_config_checks.h"
#include "experiments/hf/hf_export.h"
#include "experiments/hf/hf_test_models.h"
#include "framework/testing/fuzz_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tvlab {
namespace {

const std::string kCorpus = "experiments/hf/fuzz/corpus";

TEST(HfConfigCorpus, EverySeedRunsThroughTheFuzzTarget) {
  const int n = ReplayFuzzCorpus(kCorpus, LLVMFuzzerTestOneInput);
  EXPECT_GE(n, 9);
}

// The first failing check's message for a seed, "" when both pass.
std::string Checked(const std::string& seed) {
  auto exported = ToHuggingFace(Spec(kLlama), Weights(false));
  EXPECT_TRUE(exported.ok()) << exported.status();
  auto ours = ParseJson(exported->config_json, "ours");
  auto config = ParseJson(ReadCorpusFile(kCorpus + "/" + seed), seed);
  if (!config.ok()) return std::string(config.status().message());
  const HfArchitecture& llama = HfArchitectures()[0];
  absl::Status s = CheckArchitectures(seed, *config, llama);
  if (s.ok()) s = CheckConfig(seed, *config, *ours, llama, 4);
  return std::string(s.message());
}

TEST(HfConfigCorpus, SeedsMeanWhatTheyAreNamedFor) {
  EXPECT_EQ(Checked("llama_ok"), "");
  EXPECT_NE(Checked("bert_architectures").find("architectures is [\"BertModel\"]"), std::string::npos);
  EXPECT_NE(Checked("architectures_not_list").find("architectures is \"LlamaForCausalLM\""), std::string::npos);
  EXPECT_NE(Checked("string_hidden_size").find("a string where a number is expected"), std::string::npos);
  EXPECT_NE(Checked("rope_parameters_yarn").find("rope_type 'yarn' (scaled RoPE)"), std::string::npos);
  EXPECT_NE(Checked("rope_parameters_theta").find("rope_theta = 500000 but the spec gives 10000"),
            std::string::npos)
      << Checked("rope_parameters_theta");
  EXPECT_NE(Checked("not_object").find("not JSON"), std::string::npos);
}

}  // namespace
}  // namespace tvlab
