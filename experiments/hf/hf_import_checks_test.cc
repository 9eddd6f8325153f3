// --init_from HF_DIR refuses a config.json that does not describe the model
// it claims, without transformers: an `architectures` of another class (a
// BertModel directory whose model_type says llama loaded and evaluated), and
// a value of the wrong JSON type ("hidden_size": "4" was reported as a size
// mismatch, "4" against 4, which told the user to change the spec).

#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/hf/hf_export.h"
#include "experiments/hf/hf_import.h"
#include "experiments/hf/hf_test_models.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An exported tiny Llama in `dir`, with `from` replaced by `to` in its config.json.
std::string ExportedWith(const std::string& name, const std::string& from, const std::string& to) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  auto model = ToHuggingFace(Spec(kLlama), Weights(false));
  EXPECT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(WriteHuggingFace(*model, dir).ok());
  std::string config = Read(dir + "/config.json");
  if (!from.empty()) {
    EXPECT_NE(config.find(from), std::string::npos) << config;
    config = With(config, from, to);
  }
  std::ofstream(dir + "/config.json", std::ios::trunc) << config;
  return dir;
}

std::string ImportError(const std::string& dir) {
  auto weights = FromHuggingFace(Spec(kLlama).model(), dir);
  EXPECT_FALSE(weights.ok()) << dir;
  return std::string(weights.status().message());
}

TEST(HfImportChecks, TheExportImportsBack) {
  auto weights = FromHuggingFace(Spec(kLlama).model(), ExportedWith("plain", "", ""));
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_EQ((*weights)["decoder.layers.0.attention.w_q.weight"].ToVector(),
            Weights(false)["decoder.layers.0.attention.w_q.weight"].ToVector());
}

TEST(HfImportChecks, ArchitecturesMustNameTheImportedClass) {
  const std::string message = ImportError(ExportedWith("bert", "\"LlamaForCausalLM\"", "\"BertModel\""));
  EXPECT_NE(message.find("config.json: architectures is [\"BertModel\"], but this spec imports a "
                         "LlamaForCausalLM (model_type 'llama')"),
            std::string::npos)
      << message;
}

TEST(HfImportChecks, AValueOfTheWrongTypeIsNamedAsSuch) {
  const std::string message = ImportError(ExportedWith("string_size", "\"hidden_size\": 4", "\"hidden_size\": \"4\""));
  EXPECT_NE(message.find("config.json: hidden_size is \"4\", a string where a number is expected (the spec gives 4)"),
            std::string::npos)
      << message;
}

TEST(HfImportChecks, InitFromDirectoryRule) {
  const std::string tmp = getenv("TEST_TMPDIR");
  std::filesystem::create_directories(tmp + "/only_weights");
  std::ofstream(tmp + "/only_weights/model.safetensors") << "x";
  absl::Status lost = CheckInitFromDirectory(tmp + "/only_weights");
  EXPECT_NE(std::string(lost.message()).find("has no config.json"), std::string::npos) << lost;
  EXPECT_TRUE(CheckInitFromDirectory(ExportedWith("hf_dir", "", "")).ok());
  EXPECT_TRUE(CheckInitFromDirectory(tmp + "/only_weights/model.safetensors").ok());  // a file: read as weights
  std::filesystem::create_directories(tmp + "/run/checkpoints");
  EXPECT_TRUE(CheckInitFromDirectory(tmp + "/run").ok());
}

}  // namespace
}  // namespace tvlab
