#include "framework/testing/shipped_configs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "framework/data/sentencepiece_tokenizer.h"

namespace tvlab {
namespace {

// Whether the config's text asks for a SentencePiece tokenizer.
bool NeedsSentencePiece(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("kind: SENTENCEPIECE") != std::string::npos;
}

// The data a config names on a line "# prepared outside Bazel: PATH" (PATH
// relative to the config's directory), when it is missing: a store too big
// or too slow for a test to make (configs/lm_corpus.pbtxt); "" otherwise.
std::string MissingOutsideData(const std::string& path) {
  std::ifstream in(path);
  const std::string marker = "# prepared outside Bazel: ";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, marker.size(), marker) != 0) continue;
    const std::filesystem::path data = std::filesystem::path(path).parent_path() / line.substr(marker.size());
    if (!std::filesystem::exists(data)) return data.string();
  }
  return "";
}

}  // namespace

std::string ShippedConfigDir() {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  return std::string(runfiles != nullptr ? runfiles : ".") + "/tvlab/configs";
}

std::vector<std::string> ShippedConfigs() {
  std::vector<std::string> paths;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(ShippedConfigDir(), error)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".pbtxt") continue;
    if (!SentencePieceAvailable() && NeedsSentencePiece(path)) {
      std::cout << "skipped " << path << ": SentencePiece is not available in this build\n";
      continue;
    }
    if (const std::string missing = MissingOutsideData(path); !missing.empty()) {
      std::cout << "skipped " << path << ": its data " << missing << " is prepared outside Bazel\n";
      continue;
    }
    paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace tvlab
