#ifndef TVLAB_FRAMEWORK_TESTING_FUZZ_CORPUS_H_
#define TVLAB_FRAMEWORK_TESTING_FUZZ_CORPUS_H_

// A libFuzzer target's seed corpus replayed in a normal (gcc) test: every
// file of the folder goes through the target, which must return 0 (a crash
// fails the test as it would the fuzzer). tools/fuzz.sh builds the fuzzers.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace tvlab {

// The whole file, bytes as they are.
inline std::string ReadCorpusFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `target` on every file under `folder` (a path inside the workspace);
// returns how many files it read.
inline int ReplayFuzzCorpus(const std::string& folder, int (*target)(const uint8_t*, size_t)) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string bytes = ReadCorpusFile(entry.path().string());
    EXPECT_EQ(target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0) << entry.path();
    ++files;
  }
  return files;
}

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TESTING_FUZZ_CORPUS_H_
