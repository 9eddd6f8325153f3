// The sort experiment (seed lesson 000) trains to the foundation's bar with
// every attention score and layout: token accuracy >= 0.95 and sequence
// accuracy >= 0.75, each from its shipped config, through the real binary.
// metrics.json records the variant's KV cache per token.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace tvlab {
namespace {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/tvlab/" + path;
}

// Runs the binary; returns its exit code and appends its output to `out`.
int RunTool(const std::string& args, std::string* out) {
  FILE* pipe = popen((Runfile("experiments/run") + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out->append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double JsonNumber(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  const std::string json = s.str();
  size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return -1e300;
  return std::strtod(json.c_str() + json.find(':', at) + 1, nullptr);
}

class SortWithVariant : public ::testing::TestWithParam<std::pair<std::string, double>> {};

TEST_P(SortWithVariant, ReachesTheFoundationsAccuracyBar) {
  const std::string& name = GetParam().first;
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::string output;
  ASSERT_EQ(RunTool(Runfile("configs/" + name + ".pbtxt") + " --output_dir " + dir, &output), 0)
      << output;
  const std::string metrics = dir + "/metrics.json";
  EXPECT_GE(JsonNumber(metrics, "token_accuracy"), 0.95) << output;
  EXPECT_GE(JsonNumber(metrics, "sequence_accuracy"), 0.75) << output;
  EXPECT_EQ(JsonNumber(metrics, "kv_cache_bytes_per_token"), GetParam().second);
}

// (config, float32 KV-cache bytes per token over 2 layers)
INSTANTIATE_TEST_SUITE_P(
    Configs, SortWithVariant,
    ::testing::Values(std::make_pair("sort_digits_dot_product", 1024.0),
                      std::make_pair("sort_digits_additive", 1024.0),
                      std::make_pair("sort_digits_gqa", 512.0),
                      std::make_pair("sort_digits_mqa", 256.0),
                      std::make_pair("sort_digits_mla", 320.0)),
    [](const auto& info) { return info.param.first; });

}  // namespace
}  // namespace tvlab
